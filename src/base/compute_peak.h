// Compute peaks of this machine, measured (not taken from a data sheet: a
// VM's clock and boost are unknown), the bound `pagoda bench` sets beside
// its prefill figures:
//   f32 FMA: 256-bit vfmadd on 10 independent chains per thread
//            (2 FLOP per lane);
//   int8:    the multiply-add the AVX2 int8 kernels are built on,
//            vpmaddubsw (u8 x s8 -> i16 pairs) on 10 independent chains
//            (2 OP per byte product, as GOP/s counts a multiply-add).
// Every thread of the pool runs the loop; best of `passes`. AVX2 + FMA
// only: on machines without them the result is zero (not measured). Call
// from one thread (it runs the pool).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace pagoda {

struct ComputePeak {
  double f32_fma_flops = 0;  // FLOP/s, all threads
  double int8_ops = 0;       // OP/s of vpmaddubsw products, all threads
  int32_t n_threads = 0;
};

ComputePeak MeasureComputePeak(ThreadPool& pool, int32_t passes = 3);

}  // namespace pagoda
