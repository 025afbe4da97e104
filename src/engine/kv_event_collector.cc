#include "engine/kv_event_collector.h"

#include <utility>

namespace pagoda {

void KvEventCollector::SetSalt(std::string_view salt) {
  if (salt.empty()) {
    salt_digest_.reset();
  } else {
    salt_digest_ = kvevents::SaltDigest(salt);
  }
}

void KvEventCollector::Add(const kv::PrefixCacheEvent& e) {
  std::vector<kvevents::KvEvent>& events = batch_.events;
  if (e.kind == kv::PrefixCacheEvent::Kind::kEvicted) {
    Removed(kvevents::kMediumCpu, e.hash);
    return;
  }
  // A chain continues only in the pool's medium, under one salt (its hashes fold the salt in, so
  // a parent match implies it; the check keeps extra_keys aligned anyway).
  const bool extends = !e.first && !events.empty() && std::holds_alternative<kvevents::BlockStored>(events.back()) &&
                       std::get<kvevents::BlockStored>(events.back()).medium == kvevents::kMediumCpu &&
                       e.parent == last_stored_ &&
                       std::get<kvevents::BlockStored>(events.back()).extra_keys.has_value() == salt_digest_.has_value();
  if (!extends) {
    kvevents::BlockStored s;
    if (!e.first) s.parent_block_hash = ExternalHash(e.parent);
    s.block_size = block_size_;
    s.medium = kvevents::kMediumCpu;
    if (salt_digest_) s.extra_keys.emplace();
    events.emplace_back(std::move(s));
  }
  auto& s = std::get<kvevents::BlockStored>(events.back());
  s.block_hashes.push_back(ExternalHash(e.hash));
  if (salt_digest_) s.extra_keys->emplace_back(std::vector<kvevents::ExtraKey>{kvevents::ExtraKey::Int(*salt_digest_)});
  s.token_ids.insert(s.token_ids.end(), e.tokens.begin(), e.tokens.end());
  last_stored_ = e.hash;
}

void KvEventCollector::Add(const kv::TierEvent& e) {
  if (e.kind == kv::TierEvent::Kind::kRemoved) {
    Removed(e.medium, e.hash);
    return;
  }
  std::vector<kvevents::KvEvent>& events = batch_.events;
  auto* last = events.empty() ? nullptr : std::get_if<kvevents::BlockStored>(&events.back());
  if (last == nullptr || last->medium != e.medium || e.first || e.parent != last_stored_) {
    kvevents::BlockStored s;
    // A chain's first block goes out with a nil parent, as the pool's do.
    if (!e.first) s.parent_block_hash = ExternalHash(e.parent);
    s.block_size = block_size_;
    s.medium = std::string(e.medium);
    last = &std::get<kvevents::BlockStored>(events.emplace_back(std::move(s)));
  }
  last->block_hashes.push_back(ExternalHash(e.hash));
  last->token_ids.insert(last->token_ids.end(), e.tokens.begin(), e.tokens.end());
  last_stored_ = e.hash;
}

void KvEventCollector::Removed(std::string_view medium, const kv::BlockHash& hash) {
  std::vector<kvevents::KvEvent>& events = batch_.events;
  auto* last = events.empty() ? nullptr : std::get_if<kvevents::BlockRemoved>(&events.back());
  if (last == nullptr || last->medium != medium) {
    kvevents::BlockRemoved r;
    r.medium = std::string(medium);
    last = &std::get<kvevents::BlockRemoved>(events.emplace_back(std::move(r)));
  }
  last->block_hashes.push_back(ExternalHash(hash));
}

void KvEventCollector::AddCleared() {
  batch_.events.clear();
  batch_.events.emplace_back(std::in_place_type<kvevents::AllBlocksCleared>);
}

kvevents::EventBatch KvEventCollector::Take(double ts) {
  kvevents::EventBatch b = std::move(batch_);
  b.ts = ts;
  batch_ = kvevents::EventBatch();
  return b;
}

}  // namespace pagoda
