// DeviceBuffer: one allocation in a backend's memory (host memory for the CPU
// backend, device memory for CUDA), freed when the buffer goes. Move-only.
// The backend that allocated it must outlive it. The address is a device
// address: only the backend's ops and copies may dereference it.
#pragma once

#include <cstdint>
#include <utility>

namespace pagoda::kernels {

// Where a DeviceBuffer returns its memory (implemented by each Backend).
class DeviceMemory {
 public:
  virtual void Free(void* data) noexcept = 0;

 protected:
  ~DeviceMemory() = default;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(void* data, int64_t bytes, DeviceMemory* owner) : data_(data), bytes_(bytes), owner_(owner) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), owner_(std::exchange(o.owner_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Reset();
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      owner_ = std::exchange(o.owner_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  void* data() const { return data_; }
  int64_t bytes() const { return bytes_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }

  void Reset() {
    if (data_ != nullptr && owner_ != nullptr) owner_->Free(data_);
    data_ = nullptr;
    bytes_ = 0;
    owner_ = nullptr;
  }

 private:
  void* data_ = nullptr;
  int64_t bytes_ = 0;
  DeviceMemory* owner_ = nullptr;
};

}  // namespace pagoda::kernels
