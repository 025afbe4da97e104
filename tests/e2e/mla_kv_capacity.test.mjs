// MLA KV memory: for a deepseek2 model the paged cache stores, per token and
// layer, the normalised latent and the shared RoPE key only
// (kv_lora_rank + rope dims elements, plus one scale byte for the scaled
// types), so the capacity `pagoda serve` reports at a fixed --kv-cache-memory
// is exactly that size's. The synthetic deepseek2 fixture: kv_lora_rank 32,
// rope 16, 2 layers (../shared/testdata/synthetic/README.md); decompressed
// per-head K and V would be 8 heads x (32 + 16) elements per layer.
// Usage: node mla_kv_capacity.test.mjs <pagoda binary> <any model> (uses the fixture beside it)
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { Server, makeRunner, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const fixture = path.join(path.dirname(modelPath), 'synthetic', 'deepseek2.gguf');
if (!fs.existsSync(fixture)) {
  console.log(`skipped: ${fixture} is absent`);
  process.exit(0);
}
const { test, run } = makeRunner();
const kMemory = 1 << 20, kBlock = 16, kLayers = 2, kLatent = 32 + 16;
const roundLine = n => Math.ceil(n / 64) * 64;

for (const [dtype, elem, scaled] of [['f16', 2, false], ['bf16', 2, false], ['fp8_e4m3', 1, true],
                                     ['int8', 1, true], ['f32', 4, false]]) {
  test(`${dtype}: capacity = memory / ((kv_lora + rope) x layers x ${elem} B${scaled ? ' + scales' : ''})`, async () => {
    const server = await Server.start(bin, fixture, OpenAI,
                                      ['--kv-cache-memory', String(kMemory), '--kv-cache-dtype', dtype]);
    try {
      const m = await server.metrics();
      // A block: each layer's latent rows (cache-line aligned), then one scale
      // byte per (layer, position) for fp8 / int8.
      const blockBytes = kLayers * roundLine(kLatent * kBlock * elem) + (scaled ? roundLine(kLayers * kBlock) : 0);
      const want = Math.floor(kMemory / blockBytes) * kBlock;
      assert.equal(m.kv_cache_capacity_tokens, want);
      const perToken = kMemory / m.kv_cache_capacity_tokens;
      console.log(`  ${dtype}: ${m.kv_cache_capacity_tokens} tokens, ${perToken.toFixed(1)} B/token ` +
                  `(latent ${kLatent * kLayers * elem} B${scaled ? ` + ${kLayers} scale B` : ''})`);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
}

await run();
