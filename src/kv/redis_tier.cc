#include "kv/redis_tier.h"

#include <chrono>
#include <cstdio>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/log.h"
#include "kv/write_behind_queue.h"
#include "redis/redis_client.h"

namespace pagoda::kv {
namespace {

using Clock = std::chrono::steady_clock;
using redis::RedisReply;

// At most one warning per this many seconds while commands fail.
constexpr double kWarnEverySeconds = 10;

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string Hex16(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof(s), "%016llx", static_cast<unsigned long long>(v));
  return s;
}

std::string_view Bytes(const std::vector<uint8_t>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size()};
}

std::span<const uint8_t> Bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Redis's maxmemory is the tier's bound. Best effort: CONFIG may be
// disabled (managed services), and then nothing is said.
void WarnAboutTheBound(redis::RedisClient& client) {
  Result<RedisReply> r = client.Command({"CONFIG", "GET", "maxmemory*"});
  if (!r.ok() || r->type != RedisReply::Type::kArray) return;
  std::string maxmemory, policy;
  for (size_t i = 0; i + 1 < r->elements.size(); i += 2) {
    if (r->elements[i].bytes == "maxmemory") maxmemory = r->elements[i + 1].bytes;
    if (r->elements[i].bytes == "maxmemory-policy") policy = r->elements[i + 1].bytes;
  }
  if (maxmemory == "0") {
    PAGODA_LOG(Warning) << "KV Redis tier: " << client.url()
                        << " has no maxmemory: only the TTL bounds the blocks it keeps "
                           "(set maxmemory and maxmemory-policy allkeys-lru)";
  } else if (policy == "noeviction") {
    PAGODA_LOG(Warning) << "KV Redis tier: " << client.url()
                        << " has maxmemory-policy noeviction: once full it refuses new blocks "
                           "(allkeys-lru evicts the least recently used instead)";
  }
}

}  // namespace

struct RedisTier::Impl {
  RedisTierOptions options;
  std::unique_ptr<redis::RedisClient> client;
  std::string key_prefix;  // "pagoda:kv:<fingerprint>:"
  std::string ttl;         // options.ttl_ms in decimal
  int64_t record_bytes = 0;

  mutable std::mutex mu;  // known, stats, warnings; never held across a command or a queue call
  // Hashes this process wrote or saw stored, least recently used first.
  std::list<BlockHash> known_lru;
  std::unordered_map<BlockHash, std::list<BlockHash>::iterator, BlockHashHasher> known;
  KvTierStats stats;
  int64_t failures = 0;                  // since the last warning
  std::optional<Clock::time_point> warned;
  std::vector<uint8_t> write_buffer;     // the writer thread's
  // Last: destroyed (drained, writer joined) before what its writes touch.
  std::unique_ptr<WriteBehindQueue> queue;

  std::string KeyOf(const BlockHash& h) const { return key_prefix + h.ToHex(); }

  // The local set; under mu.
  void Remember(const BlockHash& h) {
    if (const auto it = known.find(h); it != known.end()) {
      known_lru.splice(known_lru.end(), known_lru, it->second);
      return;
    }
    known_lru.push_back(h);
    known[h] = std::prev(known_lru.end());
    if (static_cast<int64_t>(known.size()) > options.max_known) {
      known.erase(known_lru.front());
      known_lru.pop_front();
    }
  }
  void Forget(const BlockHash& h) {
    if (const auto it = known.find(h); it != known.end()) {
      known_lru.erase(it->second);
      known.erase(it);
    }
  }
  bool Known(const BlockHash& h) {
    const auto it = known.find(h);
    if (it == known.end()) return false;
    known_lru.splice(known_lru.end(), known_lru, it->second);
    return true;
  }

  // A command failed; under mu. Warns at most every kWarnEverySeconds.
  void NoteFailure(const Status& st) {
    ++failures;
    if (warned && Seconds(*warned) < kWarnEverySeconds) return;
    PAGODA_LOG(Warning) << st.message() << " (failed commands since the last warning: " << failures << ")";
    failures = 0;
    warned = Clock::now();
  }

  void Write(const QueuedBlock& b);
  Result<BlockRecord> Verify(const BlockHash& hash, const RedisReply& value, void* payload) const;
};

// On the queue's writer thread.
void RedisTier::Impl::Write(const QueuedBlock& b) {
  const Clock::time_point t0 = Clock::now();
  const std::string key = KeyOf(b.hash);
  // Stored already (by another replica, or by this process earlier): keep
  // it another TTL instead of sending the block again.
  Result<RedisReply> r = client->CommandOk({"PEXPIRE", key, ttl});
  const bool present = r.ok() && r->type == RedisReply::Type::kInteger && r->integer == 1;
  bool written = false;
  if (r.ok() && !present) {
    write_buffer.clear();
    EncodeBlock(options.layout, b.hash, b.parent, b.tokens, b.payload.data(), &write_buffer);
    const std::string_view argv[] = {"SET", key, Bytes(write_buffer), "PX", ttl};
    r = client->CommandOk(argv);
    written = r.ok();
  }
  const double dt = Seconds(t0);
  std::lock_guard<std::mutex> lock(mu);
  stats.write_seconds += dt;
  if (written) {
    ++stats.writes;
    stats.write_bytes += record_bytes;
  } else {
    ++stats.dropped;
  }
  if (written || present) Remember(b.hash);
  if (!r.ok()) NoteFailure(r.status());
}

// The value of `hash`'s key as a record of this layout, payload copied out.
Result<BlockRecord> RedisTier::Impl::Verify(const BlockHash& hash, const RedisReply& value, void* payload) const {
  if (value.type != RedisReply::Type::kBytes) {
    return InvalidArgument("KV Redis tier: key " + KeyOf(hash) + " is not a string");
  }
  if (static_cast<int64_t>(value.bytes.size()) != record_bytes) {
    return InvalidArgument("KV Redis tier: block " + hash.ToHex() + " has " + std::to_string(value.bytes.size()) +
                           " bytes, a record has " + std::to_string(record_bytes));
  }
  // The header first, so that a record filed under another hash leaves
  // `payload` untouched like every other refusal.
  PAGODA_ASSIGN_OR_RETURN(const BlockRecord header, DecodeBlockHeader(options.layout, Bytes(value.bytes)));
  if (header.hash != hash) {
    return InvalidArgument("KV Redis tier: key " + KeyOf(hash) + " holds block " + header.hash.ToHex());
  }
  return DecodeBlock(options.layout, Bytes(value.bytes), payload);
}

Result<std::unique_ptr<RedisTier>> RedisTier::Open(const RedisTierOptions& options) {
  if (!TierLayoutValid(options.layout)) return InvalidArgument("KV Redis tier: invalid block layout");
  if (options.ttl_ms < 1) return InvalidArgument("KV Redis tier: ttl_ms must be >= 1");
  if (options.timeout_ms < 1) return InvalidArgument("KV Redis tier: timeout_ms must be >= 1");
  if (options.retry_after_ms < 0) return InvalidArgument("KV Redis tier: retry_after_ms must be >= 0");
  if (options.max_queued < 1) return InvalidArgument("KV Redis tier: max_queued must be >= 1");
  if (options.pool_size < 1) return InvalidArgument("KV Redis tier: pool_size must be >= 1");
  if (options.max_known < 0) return InvalidArgument("KV Redis tier: max_known must be >= 0");
  redis::RedisClientOptions co;
  co.name = "KV Redis tier";
  co.pool_size = options.pool_size;
  co.connect_timeout_ms = options.timeout_ms;
  co.io_timeout_ms = options.timeout_ms;
  co.retry_after_ms = options.retry_after_ms;
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<redis::RedisClient> client, redis::RedisClient::Create(options.url, co));
  PAGODA_RETURN_IF_ERROR(client->Ping());
  WarnAboutTheBound(*client);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->client = std::move(client);
  impl->key_prefix = "pagoda:kv:" + Hex16(options.layout.model_fingerprint) + ":";
  impl->ttl = std::to_string(options.ttl_ms);
  impl->record_bytes = options.layout.RecordBytes();
  Impl* p = impl.get();
  impl->queue = std::make_unique<WriteBehindQueue>("pagoda-kv-redis", options.max_queued,
                                                   [p](const QueuedBlock& b) { p->Write(b); });
  PAGODA_LOG(Info) << "KV Redis tier: " << impl->client->url() << ", keys " << impl->key_prefix << "*";
  return std::unique_ptr<RedisTier>(new RedisTier(std::move(impl)));
}

RedisTier::RedisTier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RedisTier::~RedisTier() { impl_->queue.reset(); }

const BlockLayout& RedisTier::layout() const { return impl_->options.layout; }

std::string RedisTier::KeyOf(const BlockHash& hash) const { return impl_->KeyOf(hash); }

bool RedisTier::Put(const BlockHash& hash, const BlockHash& parent, std::span<const int32_t> tokens,
                    const void* payload) {
  Impl& m = *impl_;
  PAGODA_CHECK(static_cast<int64_t>(tokens.size()) == m.options.layout.block_size)
      << "a KV block holds " << m.options.layout.block_size << " tokens, got " << tokens.size();
  const auto* bytes = static_cast<const uint8_t*>(payload);
  // While Redis is known to be down the copy would only be thrown away.
  if (!m.client->backing_off() &&
      m.queue->Push(hash, parent, tokens, {bytes, static_cast<size_t>(m.options.layout.block_bytes)})) {
    return true;
  }
  std::lock_guard<std::mutex> lock(m.mu);
  ++m.stats.dropped;
  return false;
}

bool RedisTier::Contains(const BlockHash& hash) const {
  Impl& m = *impl_;
  if (m.queue->Contains(hash)) return true;
  if (m.client->backing_off()) return false;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.Known(hash)) return true;
  }
  Result<RedisReply> r = m.client->CommandOk({"EXISTS", m.KeyOf(hash)});
  std::lock_guard<std::mutex> lock(m.mu);
  if (!r.ok()) {
    m.NoteFailure(r.status());
    return false;
  }
  if (r->integer != 1) return false;
  m.Remember(hash);
  return true;
}

Result<BlockRecord> RedisTier::Get(const BlockHash& hash, void* payload) {
  Impl& m = *impl_;
  // A queued block is served from its queued copy (a hit, not in read_bytes).
  if (std::optional<BlockRecord> queued = m.queue->CopyQueued(hash, payload)) {
    std::lock_guard<std::mutex> lock(m.mu);
    ++m.stats.hits;
    return *std::move(queued);
  }
  const Clock::time_point t0 = Clock::now();
  const std::string key = m.KeyOf(hash);
  Result<RedisReply> r = m.client->Command({"GET", key});
  if (!r.ok() || (r->is_error() && r->bytes.rfind("WRONGTYPE", 0) != 0)) {
    const Status st = r.ok() ? IoError("KV Redis tier: " + m.client->url() + ": GET: " + r->bytes) : r.status();
    std::lock_guard<std::mutex> lock(m.mu);
    ++m.stats.misses;
    m.NoteFailure(st);
    return st;
  }
  if (r->is_nil()) {
    std::lock_guard<std::mutex> lock(m.mu);
    ++m.stats.misses;
    m.Forget(hash);
    return NotFound("KV Redis tier: block " + hash.ToHex() + " is not stored");
  }
  Result<BlockRecord> rec = m.Verify(hash, *r, payload);
  const double dt = Seconds(t0);
  if (rec.ok()) {
    std::lock_guard<std::mutex> lock(m.mu);
    ++m.stats.hits;
    m.stats.read_bytes += m.record_bytes;
    m.stats.read_seconds += dt;
    m.Remember(hash);
    return rec;
  }
  // Never served, and deleted so that no replica reads it again. (A good
  // record another replica SET in between is deleted too: a cache miss.)
  Result<RedisReply> del = m.client->CommandOk({"DEL", key});
  std::lock_guard<std::mutex> lock(m.mu);
  ++m.stats.corrupt;
  m.Forget(hash);
  if (!del.ok()) m.NoteFailure(del.status());
  PAGODA_LOG(Warning) << "KV Redis tier: dropped block " << hash.ToHex() << ": " << rec.status().ToString();
  return rec;
}

void RedisTier::Flush() { impl_->queue->Flush(); }

KvTierStats RedisTier::stats() const {
  const int64_t queued = impl_->queue->depth();
  std::lock_guard<std::mutex> lock(impl_->mu);
  KvTierStats s = impl_->stats;
  s.blocks = static_cast<int64_t>(impl_->known.size());
  s.bytes = s.blocks * impl_->record_bytes;
  s.queued = queued;
  return s;
}

}  // namespace pagoda::kv
