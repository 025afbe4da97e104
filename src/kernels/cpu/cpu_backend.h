// The CPU as a Backend (kernels/backend.h): a thin adapter over the kernels of
// kernels/cpu. Its device memory is host memory (256-byte aligned), its
// streams run every op at once on the calling thread and the ThreadPool, so
// Synchronize has nothing to wait for. Owned by whoever made it; the pool must
// outlive it.
#pragma once

#include <memory>

#include "base/thread_pool.h"
#include "kernels/backend.h"

namespace pagoda::kernels {

std::unique_ptr<Backend> MakeCpuBackend(ThreadPool& pool);

}  // namespace pagoda::kernels
