// ReplicaRole: which legs of prefill/decode disaggregation a replica serves
// (docs/GATEWAY.md, "Prefill/decode disaggregation"). "prefill" replicas only
// get prefill legs from the gateway (never a client's request); "decode"
// replicas get decode legs and ordinary requests; "both" (the default) serve
// either leg and ordinary colocated requests.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda::gateway {

enum class ReplicaRole : uint8_t {
  kBoth = 0,
  kPrefill = 1,
  kDecode = 2,
};

// "both" | "prefill" | "decode".
const char* ReplicaRoleName(ReplicaRole r);
std::optional<ReplicaRole> ParseReplicaRole(std::string_view name);

// May run a prefill leg (prefill or both).
inline bool PrefillCapable(ReplicaRole r) { return r != ReplicaRole::kDecode; }
// May take a client's request: a decode leg or an ordinary one (decode or both).
inline bool DecodeCapable(ReplicaRole r) { return r != ReplicaRole::kPrefill; }

}  // namespace pagoda::gateway
