// PostgreSQL CounterStore (libpqxx): the store several gateway processes share.
// Each Acquire / Finish is one statement calling a PL/pgSQL function (one
// round trip, one transaction) that locks the counter rows it needs with
// SELECT ... FOR UPDATE in a fixed (key, kind) order, so concurrent
// admissions never deadlock and never over-admit. Slot rows are only touched
// under their key's lock row. Old windows and expired slots are deleted at
// most once per window per process.
#pragma once

#include <memory>
#include <string>

#include "tenancy/counter_store.h"

namespace pagoda::tenancy {

// `uri` is a libpq URI or key=value string. Creates the tables and functions
// when missing. Connections are pooled (options.pool_size) and opened lazily;
// a broken one is dropped and reopened.
Result<std::unique_ptr<CounterStore>> OpenPostgresCounterStore(const std::string& uri,
                                                               const CounterStoreOptions& options = {});

}  // namespace pagoda::tenancy
