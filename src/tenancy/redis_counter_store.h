// Redis CounterStore (over redis::RedisClient): shared counters in one Redis
// server. Each Acquire / Finish is one Lua script (EVALSHA, EVAL after a
// restart), which Redis runs atomically: check every rule, then apply all or
// none. Window counters are string keys with a TTL of two windows;
// concurrency slots are a sorted set per key scored by lease expiry. Keys:
// "pagoda:rl:<key>:r:<window>", ":t:<window>", ":c". A single server (or all
// keys in one slot) is assumed. The client pools connections, with I/O
// timeouts, and reopens them after the server went away. Counters live in
// Redis memory: a restart without persistence starts every window from zero.
#pragma once

#include <memory>
#include <string>

#include "tenancy/counter_store.h"

namespace pagoda::tenancy {

// url: "redis://[:password@]host[:port][/db]".
Result<std::unique_ptr<CounterStore>> OpenRedisCounterStore(const std::string& url,
                                                            const CounterStoreOptions& options = {});

}  // namespace pagoda::tenancy
