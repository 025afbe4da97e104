// Engine: the KV page integrity check before each step, and its test hook.
#include "base/log.h"
#include "engine/engine.h"

namespace pagoda {

bool Engine::StopCorruptSequences() {
  if (options_.testing_kv_fault) MaybePlantTestingFault();
  if (kv_->integrity_mode() == kv::IntegrityMode::kOff) return false;
  integrity_seqs_.clear();
  for (const ScheduledChunk& c : plan_.chunks) integrity_seqs_.push_back(c.seq->slot);
  integrity_failures_.clear();
  kv_->CheckIntegrity(integrity_seqs_, &integrity_failures_);
  if (integrity_failures_.empty()) return false;
  // Copy the pointers first: finishing a sequence destroys it.
  std::vector<Sequence*> failed;
  for (const kv::IntegrityFailure& f : integrity_failures_) {
    for (const ScheduledChunk& c : plan_.chunks) {
      if (c.seq->slot == f.seq) {
        failed.push_back(c.seq);
        break;
      }
    }
  }
  PAGODA_CHECK(failed.size() == integrity_failures_.size());
  for (size_t i = 0; i < failed.size(); ++i) {
    Sequence* s = failed[i];
    const kv::IntegrityFailure& f = integrity_failures_[i];
    ++stats_.kv_integrity_failures_total;
    // Ids, tags and ref counts only: never tokens.
    PAGODA_LOG(Error) << "KV cache integrity check failed for request " << s->request().id << " sequence "
                      << s->index << " (" << f.Describe() << "): stopping it";
    kv_->DiscardCorrupt(f.seq);
    FinishWithError(s, FinishReason::kError, kv::IntegrityError(f));
  }
  return true;
}

void Engine::MaybePlantTestingFault() {
  if (testing_fault_planted_) return;
  const KvFault kind = *options_.testing_kv_fault;
  std::vector<Sequence*> ready;
  for (const ScheduledChunk& c : plan_.chunks) {
    if (c.seq->n_generated() >= 2 && c.n == 1) ready.push_back(c.seq);
  }
  if (ready.empty() || (kind == KvFault::kSwap && ready.size() < 2)) return;
  const Status st = kv_->InjectFaultForTesting(kind, ready[0]->slot, kind == KvFault::kSwap ? ready[1]->slot : -1);
  if (!st.ok()) return;  // no private block yet: try again next step
  testing_fault_planted_ = true;
  PAGODA_LOG(Warning) << "testing: planted a KV fault in request " << ready[0]->request().id
                      << (kind == KvFault::kSwap ? " and request " + ready[1]->request().id : std::string());
}

Status Engine::InjectKvFaultForTesting(KvFault kind, const std::string& request_id, int32_t index,
                                       const std::string& other_request_id) {
  PAGODA_CHECK(!started_.load()) << "InjectKvFaultForTesting needs an engine driven by Step()";
  auto slot_of = [&](const std::string& id, int32_t i) {
    for (const auto& s : scheduler_.running()) {
      if (s->request().id == id && s->index == i) return s->slot;
    }
    return -1;
  };
  const int32_t seq = slot_of(request_id, index);
  if (seq < 0) return NotFound("request " + request_id + " has no running sequence " + std::to_string(index));
  int32_t other = -1;
  if (kind == KvFault::kSwap) {
    other = slot_of(other_request_id, 0);
    if (other < 0) return NotFound("request " + other_request_id + " is not running");
  }
  return kv_->InjectFaultForTesting(kind, seq, other);
}

}  // namespace pagoda
