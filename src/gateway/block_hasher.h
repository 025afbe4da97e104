// Chained block hashes: the gateway's key for a KV block, computed the same
// way from a KV event's token ids and from a request's own tokens, so that
// the two meet in the cache index (kv_index.h) and the prefix tree
// (prefix_tree.h). Pure functions; any thread.
//
// Block i's hash is XXH3-64 of the block's token ids (int32, little-endian,
// block_size of them) seeded with block i-1's hash; block 0 is seeded with
// `salt` (the index's or the model's salt, scoped per tenant by ScopedRoot).
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

// The root seed of a chain under a cache scope: `base` (the index's or the
// model's salt) when `scope_digest` is 0 (no scope: the unsalted cache),
// else a hash of both. `scope_digest` is what an engine reports in a
// BlockStored's extra keys for a salted chain: XXH3-64 of its cache salt
// (docs/KV_EVENTS.md), so a request chained under the same scope meets
// exactly that tenant's blocks and never another's.
uint64_t ScopedRoot(uint64_t base, uint64_t scope_digest);

}  // namespace pagoda::gateway
