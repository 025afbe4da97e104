#include "gateway/replica_role.h"

namespace pagoda::gateway {

const char* ReplicaRoleName(ReplicaRole r) {
  switch (r) {
    case ReplicaRole::kBoth:
      return "both";
    case ReplicaRole::kPrefill:
      return "prefill";
    case ReplicaRole::kDecode:
      return "decode";
  }
  return "both";
}

std::optional<ReplicaRole> ParseReplicaRole(std::string_view name) {
  for (ReplicaRole r : {ReplicaRole::kBoth, ReplicaRole::kPrefill, ReplicaRole::kDecode}) {
    if (name == ReplicaRoleName(r)) return r;
  }
  return std::nullopt;
}

}  // namespace pagoda::gateway
