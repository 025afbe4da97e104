// FloatBuffer: a fixed-size, 64-byte aligned, uninitialised float array for
// scratch space allocated once at load.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "base/check.h"

namespace pagoda {

class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(int64_t n) : size_(n) {
    const size_t bytes = (static_cast<size_t>(n) * sizeof(float) + 63) / 64 * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes)));
    PAGODA_CHECK(data_ != nullptr) << "out of memory allocating " << bytes << " bytes";
  }
  float* data() const { return data_.get(); }
  int64_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

}  // namespace pagoda
