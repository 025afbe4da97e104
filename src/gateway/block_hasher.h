// Chained block hashes: the gateway's key for a KV block, computed the same
// way from a KV event's token ids and from a request's own tokens, so that
// the two meet in the cache index (kv_index.h) and the prefix tree
// (prefix_tree.h). Pure functions; any thread.
//
// Block i's hash is XXH3-64 of the block's token ids (int32, little-endian,
// block_size of them) seeded with block i-1's hash; block 0 is seeded with
// `salt` (0 until tenants exist; the prefix tree uses a per-model salt).
// A hash therefore names the whole prefix up to and including its block.
// Only FULL blocks are hashed: an engine caches nothing else.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace pagoda::gateway {

// One hash per full block of `tokens` (a trailing partial block is ignored).
// block_size <= 0 yields no hashes.
std::vector<uint64_t> ChainedBlockHashes(std::span<const int32_t> tokens, int block_size, uint64_t salt = 0);

// Hash of one block (its token ids) chained on `parent` (the previous
// block's hash, or the salt for the first block).
uint64_t ChainBlockHash(uint64_t parent, std::span<const int32_t> block_tokens);

// The same chain over raw bytes, for requests the gateway could not
// tokenize: one hash per full block of `block_bytes` bytes.
std::vector<uint64_t> ChainedTextHashes(std::string_view text, int block_bytes, uint64_t salt = 0);

// A stable 64-bit hash of a string (model names as salts, id tie-breaks).
uint64_t StableHash(std::string_view s);

}  // namespace pagoda::gateway
