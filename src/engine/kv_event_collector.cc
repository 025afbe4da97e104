#include "engine/kv_event_collector.h"

#include <utility>

namespace pagoda {

void KvEventCollector::Add(const kv::PrefixCacheEvent& e) {
  std::vector<kvevents::KvEvent>& events = batch_.events;
  if (e.kind == kv::PrefixCacheEvent::Kind::kEvicted) {
    if (events.empty() || !std::holds_alternative<kvevents::BlockRemoved>(events.back())) {
      kvevents::BlockRemoved r;
      r.medium = kvevents::kMediumCpu;
      events.emplace_back(std::move(r));
    }
    std::get<kvevents::BlockRemoved>(events.back()).block_hashes.push_back(ExternalHash(e.hash));
    return;
  }
  const bool extends = !e.first && !events.empty() && std::holds_alternative<kvevents::BlockStored>(events.back()) &&
                       e.parent == last_stored_;
  if (!extends) {
    kvevents::BlockStored s;
    if (!e.first) s.parent_block_hash = ExternalHash(e.parent);
    s.block_size = block_size_;
    s.medium = kvevents::kMediumCpu;
    events.emplace_back(std::move(s));
  }
  auto& s = std::get<kvevents::BlockStored>(events.back());
  s.block_hashes.push_back(ExternalHash(e.hash));
  s.token_ids.insert(s.token_ids.end(), e.tokens.begin(), e.tokens.end());
  last_stored_ = e.hash;
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
