#include "kernels/device.h"

#include <charconv>

namespace pagoda::kernels {

Result<DeviceSpec> ParseDeviceSpec(std::string_view text) {
  if (text == "cpu") return DeviceSpec{DeviceKind::kCpu, 0};
  if (text == "cuda") return DeviceSpec{DeviceKind::kCuda, 0};
  constexpr std::string_view kCudaPrefix = "cuda:";
  if (text.starts_with(kCudaPrefix)) {
    const std::string_view n = text.substr(kCudaPrefix.size());
    int ordinal = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), ordinal);
    if (!n.empty() && ec == std::errc() && end == n.data() + n.size() && ordinal >= 0 && ordinal < 1024) {
      return DeviceSpec{DeviceKind::kCuda, ordinal};
    }
  }
  return InvalidArgument("unknown device '" + std::string(text) + "' (expected cpu, cuda or cuda:N)");
}

std::string DeviceSpecName(const DeviceSpec& spec) {
  return spec.kind == DeviceKind::kCpu ? "cpu" : "cuda:" + std::to_string(spec.ordinal);
}

}  // namespace pagoda::kernels
