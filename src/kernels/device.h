// Where the kernels run: the CPU (the default) or a CUDA GPU by ordinal, as
// `--device cpu|cuda[:N]` names it. A value; parsing never touches a device
// (MakeBackend in backend.h does).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace pagoda::kernels {

enum class DeviceKind { kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int ordinal = 0;  // CUDA device index; 0 for the CPU
};

// "cpu" | "cuda" | "cuda:N" (N a device index, 0..1023). Case-sensitive, as
// the other flag values are.
Result<DeviceSpec> ParseDeviceSpec(std::string_view text);
// "cpu" or "cuda:N".
std::string DeviceSpecName(const DeviceSpec& spec);

}  // namespace pagoda::kernels
