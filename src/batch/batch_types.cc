#include "batch/batch_types.h"

#include <array>
#include <utility>

namespace pagoda::batch {
namespace {

constexpr std::array<std::pair<BatchStatus, const char*>, 8> kStatusNames{{
    {BatchStatus::kValidating, "validating"},
    {BatchStatus::kInProgress, "in_progress"},
    {BatchStatus::kFinalizing, "finalizing"},
    {BatchStatus::kCompleted, "completed"},
    {BatchStatus::kFailed, "failed"},
    {BatchStatus::kExpired, "expired"},
    {BatchStatus::kCancelling, "cancelling"},
    {BatchStatus::kCancelled, "cancelled"},
}};

}  // namespace

const char* BatchStatusName(BatchStatus s) {
  for (const auto& [v, n] : kStatusNames) {
    if (v == s) return n;
  }
  return "failed";
}

Result<BatchStatus> ParseBatchStatus(std::string_view name) {
  for (const auto& [v, n] : kStatusNames) {
    if (name == n) return v;
  }
  return DataLoss("unknown batch status '" + std::string(name) + "' in the store");
}

bool IsTerminal(BatchStatus s) {
  return s == BatchStatus::kCompleted || s == BatchStatus::kFailed || s == BatchStatus::kExpired ||
         s == BatchStatus::kCancelled;
}

const char* LineStateName(LineState s) {
  switch (s) {
    case LineState::kPending:
      return "pending";
    case LineState::kDone:
      return "done";
    case LineState::kError:
      return "error";
  }
  return "error";
}

Result<LineState> ParseLineState(std::string_view name) {
  if (name == "pending") return LineState::kPending;
  if (name == "done") return LineState::kDone;
  if (name == "error") return LineState::kError;
  return DataLoss("unknown batch line state '" + std::string(name) + "' in the store");
}

}  // namespace pagoda::batch
