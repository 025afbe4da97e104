// The attention tile compiled with AVX-512 flags; chosen at run time by
// ops_attention.cc when ActiveIsa() is kAvx512.
#define PAGODA_ATTENTION_TILE_FN AttentionTileAvx512
#include "kernels/cpu/ops_attention_tile_impl.inc"
