// The attention tile and f16 stores compiled with AVX2 + FMA + F16C flags;
// chosen at run time by ops_attention.cc when ActiveIsa() is kAvx2.
#define PAGODA_ATTENTION_TILE_FN AttentionTileAvx2
#define PAGODA_STORE_F16_FN StoreF16Avx2
#define PAGODA_LOAD_KV_ROW_FN LoadKvRowAvx2
#define PAGODA_STORE_KV_QUANTIZED_FN StoreKvQuantizedAvx2
#include "kernels/cpu/ops_attention_tile_impl.inc"
