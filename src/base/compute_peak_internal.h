// Between compute_peak.cc and its AVX2 twin (compiled with -mavx2 -mfma):
// plain functions only.
#pragma once

#include <cstdint>

namespace pagoda::internal {

// `iters` iterations of 10 independent 256-bit FMAs (160 FMA lanes); returns
// a value derived from the results so that the loop is kept.
float FmaLoopAvx2(int64_t iters);
// `iters` iterations of 10 independent vpmaddubsw + vpaddw (320 byte
// products); same contract.
int32_t MaddubsLoopAvx2(int64_t iters);

}  // namespace pagoda::internal
