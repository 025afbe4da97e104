// SQLite CounterStore: the embedded default. Counters live in two tables of
// an SQLite file (WAL). Every Acquire / Finish is one BEGIN IMMEDIATE
// transaction, which takes the file's write lock first, so admissions from
// any number of threads and processes sharing the file are serial and exact.
// A writer held up longer than options.timeout_ms (busy_timeout) gets a
// clear "database is locked" error, never an unmetered admission.
#pragma once

#include <memory>
#include <string>

#include "tenancy/counter_store.h"

namespace pagoda::tenancy {

// Opens (creating if needed) the counters in the SQLite file at `path`.
Result<std::unique_ptr<CounterStore>> OpenSqliteCounterStore(const std::string& path,
                                                             const CounterStoreOptions& options = {});

}  // namespace pagoda::tenancy
