// The CUDA backend (kernels/backend.h) on device `ordinal`: device memory by
// cudaMalloc, streams, the ops as kernels built for sm_90a. Linked only in
// builds with PAGODA_CUDA; reach it through MakeBackend. No CUDA header is
// included here, so callers build without the toolkit.
//
// Status: these kernels compile for sm_90a but have never run on a GPU
// (docs/CUDA.md); tests/kernels/cuda_backend_test.cc checks them against the
// CPU references on a machine with a device.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace pagoda::kernels {

// FailedPrecondition when the runtime finds no usable device (no driver, no
// GPU; the runtime's reason in the message), NotFound for an ordinal past the
// last device.
Result<std::unique_ptr<Backend>> MakeCudaBackend(int ordinal);

}  // namespace pagoda::kernels
