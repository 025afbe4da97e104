// Batch: the tokens one forward step processes, explicitly (no hidden state).
// Token i belongs to sequence seq_ids[i] at position positions[i]; tokens of
// many sequences may be mixed (continuous batching). A token attends to the
// positions [0, positions[i]] of its own sequence, so a sequence's earlier
// positions must be in the KV cache already or earlier in this batch.
// Logits are produced for the tokens with want_logits set, in batch order;
// final hidden states (the LM head's or pooler's input) for the tokens with
// want_hidden set, in batch order (embeddings: model.h ForwardOutputs).
// decode[i] marks a generated token (position past its sequence's prompt),
// however it is scheduled: a decode step, or a recomputation after
// preemption; with --decode-weights those tokens go through the decode copy
// of the weights. Empty = every token is prefill.
// The engine thread builds and reuses one Batch (Clear() keeps capacity).
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda {

struct Batch {
  std::vector<int32_t> tokens;       // [n_tokens]
  std::vector<int32_t> positions;    // [n_tokens]
  std::vector<int32_t> seq_ids;      // [n_tokens]
  std::vector<uint8_t> want_logits;  // [n_tokens], 0 or 1
  std::vector<uint8_t> decode;       // [n_tokens] 0 or 1, or empty
  std::vector<uint8_t> want_hidden;  // [n_tokens] 0 or 1, or empty (none)

  void Clear() {
    tokens.clear();
    positions.clear();
    seq_ids.clear();
    want_logits.clear();
    decode.clear();
    want_hidden.clear();
  }
  void Add(int32_t token, int32_t position, int32_t seq_id, bool logits, bool is_decode = false,
           bool hidden = false) {
    tokens.push_back(token);
    positions.push_back(position);
    seq_ids.push_back(seq_id);
    want_logits.push_back(logits ? 1 : 0);
    decode.push_back(is_decode ? 1 : 0);
    want_hidden.push_back(hidden ? 1 : 0);
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_outputs() const {
    int64_t n = 0;
    for (uint8_t w : want_logits) n += w != 0;
    return n;
  }
  int64_t n_hidden_outputs() const {
    int64_t n = 0;
    for (uint8_t w : want_hidden) n += w != 0;
    return n;
  }
};

}  // namespace pagoda
