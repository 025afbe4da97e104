// The attention tile and f16 stores compiled with AVX-512 flags; chosen at run
// time by ops_attention.cc when ActiveIsa() is kAvx512.
#define PAGODA_ATTENTION_TILE_FN AttentionTileAvx512
#define PAGODA_STORE_F16_FN StoreF16Avx512
#define PAGODA_LOAD_KV_ROW_FN LoadKvRowAvx512
#define PAGODA_STORE_KV_QUANTIZED_FN StoreKvQuantizedAvx512
#include "kernels/cpu/ops_attention_tile_impl.inc"
