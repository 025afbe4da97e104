// Fixture for tests that run every op through the Backend interface on each
// backend: "cpu" always, "cuda" where MakeBackend opens a device (else the
// test skips, saying why: a build without CUDA, no GPU, no driver). Outputs
// are poisoned (NaN or 0xA5 bytes) before each op, so unwritten elements show.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/backend.h"

namespace pagoda::kernels {

// A backend opened by name, with upload / download helpers.
class BackendHarness {
 public:
  // Opens `device`; false (with the reason in *why) when it is unavailable.
  bool Open(const char* device, std::string* why) {
    const auto spec = ParseDeviceSpec(device);
    if (!spec.ok()) {
      *why = spec.status().message();
      return false;
    }
    auto b = MakeBackend(*spec, pool_);
    if (!b.ok()) {
      *why = std::string(device) + " backend unavailable: " + b.status().message();
      return false;
    }
    backend_ = std::move(*b);
    return true;
  }

  Backend& backend() { return *backend_; }
  Stream& stream() { return backend_->default_stream(); }

  template <class T>
  DeviceBuffer Upload(const std::vector<T>& v) {
    auto buf = backend_->Allocate(static_cast<int64_t>(std::max<size_t>(1, v.size()) * sizeof(T)));
    EXPECT_TRUE(buf.ok()) << buf.status().message();
    if (!buf.ok()) return DeviceBuffer();
    if (!v.empty()) {
      EXPECT_TRUE(backend_->CopyToDevice(stream(), v.data(), buf->data(), v.size() * sizeof(T)).ok());
    }
    EXPECT_TRUE(stream().Synchronize().ok());
    return std::move(*buf);
  }
  template <class T>
  std::vector<T> Download(const DeviceBuffer& buf, size_t n) {
    std::vector<T> v(n);
    EXPECT_TRUE(stream().Synchronize().ok());
    EXPECT_TRUE(backend_->CopyToHost(stream(), buf.data(), v.data(), n * sizeof(T)).ok());
    EXPECT_TRUE(stream().Synchronize().ok());
    return v;
  }
  DeviceBuffer PoisonedFloats(size_t n) { return Upload(std::vector<float>(n, NAN)); }

 private:
  ThreadPool pool_{2};
  std::unique_ptr<Backend> backend_;  // after pool_: destroyed first
};

// Parameterised over the backend name (and more, in Param's first element
// when Param is a tuple); skips when the backend is unavailable.
template <class Param>
class BackendTestBase : public ::testing::TestWithParam<Param>, public BackendHarness {
 protected:
  void SetUp() override {
    std::string why;
    if (!Open(Device(), &why)) GTEST_SKIP() << why;
  }
  const char* Device() const {
    if constexpr (std::is_same_v<Param, const char*>) {
      return this->GetParam();
    } else {
      return std::get<0>(this->GetParam());
    }
  }
};

inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// |got - want| <= rel * (1 + |want|) everywhere, and every element written.
inline void ExpectAllNear(const std::vector<float>& got, const std::vector<float>& want, double rel,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i]) && !std::isnan(want[i])) << what << ": element " << i << " not written";
    ASSERT_NEAR(got[i], want[i], rel * (1.0 + std::fabs(want[i]))) << what << ": element " << i;
  }
}

inline const char* const kBackendNames[] = {"cpu", "cuda"};
// Test names end in the backend ("All/BackendOpsTest.SoftmaxMatchesReference/cuda"),
// so --gtest_filter='*/cuda*' runs the CUDA cases alone.
inline std::string BackendParamName(const ::testing::TestParamInfo<const char*>& info) { return info.param; }

}  // namespace pagoda::kernels
