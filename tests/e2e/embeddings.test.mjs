// Embeddings, reranking and prefill-only scoring (docs/EMBEDDINGS.md) on the
// real `pagoda serve`:
//   - the official openai client's embeddings.create, float and base64 (the
//     same vectors), token-id inputs, `dimensions` (truncated, renormalised),
//     `normalize: false` (vLLM's: the pooled vector as it is);
//     LangChain.js's OpenAIEmbeddings (embedQuery / embedDocuments);
//   - batch invariance: a text embeds to the same vector, bitwise, alone and
//     inside a batch of 64 while generation streams run;
//   - completions with echo + logprobs and max_tokens 0: the prompt's
//     logprobs, no completion;
//   - bad input: empty input / strings, too many inputs, an input longer than
//     the model takes (400 naming input[i]; truncate_prompt_tokens accepted),
//     unknown encoding_format, unsupported dimensions, bad rerank documents,
//     and a model used for the wrong endpoint;
//   - with a random-weight bert cross-encoder (when `pagoda make-model` makes
//     one): /v1/rerank of many documents == /v1/score of each pair, top_n is
//     exactly the head of the full ranking, the documented response shapes.
// Usage: node embeddings.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Server, assertErrorShape, makeRunner, pool, setup, startGateway } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const work = mkdtempSync(path.join(tmpdir(), 'pagoda-embd-'));

async function post(base, route, body) {
  const r = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' },
                                             body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

const decodeBase64 = (s) => { const b = Buffer.from(s, 'base64'); return new Float32Array(b.buffer, b.byteOffset, b.length / 4); };
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const texts = ['Once upon a time there was a little cat.', 'The dog ran to the park to play with the ball.',
               'Lily saw a big red flower in the garden.', 'Tom and his mom baked a cake for the party.'];

let srv, M;  // the server, and the model name it serves
const servedName = async (s) => (await s.client.models.list()).data[0].id;
await test('start pagoda serve (stories260K as a decoder embedder)', async () => {
  srv = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', '256', '--max-waiting', '256']);
  M = await servedName(srv);
});

await test('openai client: embeddings.create, float and base64 agree; token ids; dimensions', async () => {
  const f = await srv.client.embeddings.create({ model: M, input: texts, encoding_format: 'float' });
  assert.equal(f.object, 'list');
  assert.equal(f.data.length, texts.length);
  f.data.forEach((d, i) => {
    assert.equal(d.object, 'embedding');
    assert.equal(d.index, i);
    assert.equal(d.embedding.length, 64);
    assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5, `norm ${norm(d.embedding)}`);
  });
  assert.ok(f.usage.prompt_tokens > 0 && f.usage.total_tokens === f.usage.prompt_tokens);
  // Without encoding_format the client asks for base64 and decodes it itself;
  // asked for explicitly, it hands back the string (little-endian float32).
  const dflt = await srv.client.embeddings.create({ model: M, input: texts });
  dflt.data.forEach((d, i) => assert.deepEqual(Array.from(d.embedding), f.data[i].embedding));
  const b = await srv.client.embeddings.create({ model: M, input: texts, encoding_format: 'base64' });
  b.data.forEach((d, i) => assert.deepEqual(Array.from(decodeBase64(d.embedding)), f.data[i].embedding));
  // Different texts, different vectors.
  assert.notDeepEqual(f.data[0].embedding, f.data[1].embedding);
  // Token ids as /tokenize gives them == the text.
  const tok = await post(srv.base, '/tokenize', { model: M, prompt: texts[0] });
  const t = await srv.client.embeddings.create({ model: M, input: [tok.body.tokens] });
  assert.deepEqual(t.data[0].embedding, f.data[0].embedding);
  // dimensions: the first 32, renormalised.
  const d = await srv.client.embeddings.create({ model: M, input: texts[0], dimensions: 32 });
  assert.equal(d.data[0].embedding.length, 32);
  const head = f.data[0].embedding.slice(0, 32), n = norm(head);
  d.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - head[i] / n) < 1e-6));
  // vLLM's normalize: false gives the pooled vector itself, whose direction is the normalised one.
  const raw = await post(srv.base, '/v1/embeddings', { model: M, input: texts[0], normalize: false });
  assert.equal(raw.status, 200, JSON.stringify(raw.body));
  const v = raw.body.data[0].embedding, nv = norm(v);
  assert.ok(Math.abs(nv - 1) > 1e-3, `an unnormalised final-norm row has norm ${nv}`);
  v.forEach((x, i) => assert.ok(Math.abs(x / nv - f.data[0].embedding[i]) < 1e-5));
});

await test('LangChain.js OpenAIEmbeddings works against the server', async () => {
  const { OpenAIEmbeddings } = await import('@langchain/openai');
  const e = new OpenAIEmbeddings({ model: M, apiKey: 'unused', configuration: { baseURL: `${srv.base}/v1` },
                                   maxRetries: 0 });
  const q = await e.embedQuery(texts[2]);
  const docs = await e.embedDocuments(texts);
  assert.equal(q.length, 64);
  assert.equal(docs.length, texts.length);
  const direct = await srv.client.embeddings.create({ model: M, input: texts[2] });
  assert.deepEqual(q, direct.data[0].embedding);
  assert.deepEqual(docs[2], q);
});

await test('batch invariance: alone == inside 64 inputs while generation streams run (bitwise)', async () => {
  const probe = 'A small bird sang a happy song in the tall green tree by the river.';
  const alone = (await srv.client.embeddings.create({ model: M, input: probe })).data[0].embedding;
  const many = [];
  for (let i = 0; i < 64; ++i) many.push(i === 37 ? probe : `${texts[i % texts.length]} Story number ${i}.`);
  const gens = [];
  for (let i = 0; i < 4; ++i) {
    gens.push(srv.client.chat.completions.create({ model: M, messages: [{ role: 'user', content: texts[i] }],
                                                   max_tokens: 40, temperature: 0, stream: true })
      .then(async (s) => { let n = 0; for await (const c of s) n += c.choices[0]?.delta?.content?.length ?? 0; return n; }));
  }
  const [batch] = await Promise.all([srv.client.embeddings.create({ model: M, input: many }), ...gens]);
  assert.deepEqual(batch.data[37].embedding, alone);
  // And 8 concurrent requests of 8 inputs each.
  const parts = await pool(Array.from({ length: 8 }, (_, k) => () =>
    srv.client.embeddings.create({ model: M, input: many.slice(k * 8, k * 8 + 8) })), 8);
  assert.deepEqual(parts[4].data[5].embedding, alone);
});

await test('completions echo + logprobs with max_tokens 0: the prompt scored, nothing generated', async () => {
  const r = await post(srv.base, '/v1/completions', { model: M, prompt: texts[1], echo: true, logprobs: 1,
                                                      max_tokens: 0 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const c = r.body.choices[0];
  assert.equal(c.text, texts[1]);
  assert.equal(c.finish_reason, 'length');
  assert.equal(r.body.usage.completion_tokens, 0);
  const lp = c.logprobs.token_logprobs;
  assert.equal(lp[0], null);
  assert.ok(lp.length > 5 && lp.slice(1).every((x) => typeof x === 'number' && x <= 0));
  // The same prompt logprobs as with a completion.
  const g = await post(srv.base, '/v1/completions', { model: M, prompt: texts[1], echo: true, logprobs: 1,
                                                      max_tokens: 1, temperature: 0 });
  assert.deepEqual(g.body.choices[0].logprobs.token_logprobs.slice(0, lp.length), lp);
  // Without echo, max_tokens 0 stays an error; chat too.
  assert.equal((await post(srv.base, '/v1/completions', { model: M, prompt: 'a', max_tokens: 0 })).status, 400);
  assert.equal((await post(srv.base, '/v1/chat/completions', { model: M, max_tokens: 0,
                                                               messages: [{ role: 'user', content: 'a' }] })).status, 400);
});

await test('bad input: 400s naming the field, the server keeps serving', async () => {
  const bad = async (body, param, route = '/v1/embeddings') => {
    const r = await post(srv.base, route, body);
    assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)} -> ${r.status} ${JSON.stringify(r.body)}`);
    assertErrorShape(assert, r.body, 'bad input');
    if (param !== undefined) assert.equal(r.body.error.param, param, JSON.stringify(r.body));
  };
  await bad({ model: M, input: '' }, 'input');
  await bad({ model: M, input: [] }, 'input');
  await bad({ model: M, input: ['a', ''] }, 'input[1]');
  await bad({ model: M, input: [1, 'a'] }, 'input[1]');
  await bad({ model: M, input: [[]] }, undefined);
  await bad({ model: M, input: [{ text: 'a' }] }, 'input[0]');
  await bad({ model: M, input: Array(2049).fill('a') }, 'input');
  await bad({ model: M, input: 'a', encoding_format: 'int8' }, 'encoding_format');
  await bad({ model: M, input: 'a', dimensions: 65 }, 'dimensions');
  await bad({ model: M, input: 'a', dimensions: 0 }, 'dimensions');
  await bad({ model: M, input: [999999] }, 'input[0]');
  await bad({ model: M }, 'input');
  const long = 'the cat sat on the mat and '.repeat(80);
  await bad({ model: M, input: ['ok', long] }, 'input[1]');
  const t = await post(srv.base, '/v1/embeddings', { model: M, input: ['ok', long], truncate_prompt_tokens: 100 });
  assert.equal(t.status, 200, JSON.stringify(t.body));
  assert.equal((await post(srv.base, '/v1/embeddings', { model: 'nope', input: 'a' })).status, 404);
  // Rerank documents of the wrong type (checked before the model's abilities).
  await bad({ model: M, query: 'q', documents: [1, 2] }, 'documents[0]', '/v1/rerank');
  await bad({ model: M, query: 'q', documents: [] }, 'documents', '/v1/rerank');
  await bad({ model: M, query: 'q', documents: [{ title: 'a' }] }, 'documents[0].text', '/v1/rerank');
  await bad({ model: M, text_1: ['a', 'b'], text_2: ['c'] }, 'text_1', '/v1/score');
  const ok = await srv.client.embeddings.create({ model: M, input: 'still serving' });
  assert.equal(ok.data.length, 1);
});

await test('through pagoda gateway: embeddings and scores route like the other endpoints', async () => {
  const cfg = path.join(work, 'gateway.toml');
  writeFileSync(cfg,
    `[gateway]\nhealth_interval_ms = 200\nhealth_timeout_ms = 500\nfirst_byte_timeout_ms = 30000\n\n` +
    `[[models]]\nname = "stories"\npolicy = "least_loaded"\nserved_model_name = "stories260K"\n` +
    `[[models.deployments]]\nversion = "v1"\n` +
    `[[models.deployments.replicas]]\nurl = "${srv.base}"\nname = "r0"\n`);
  const gw = await startGateway(bin, cfg);
  try {
    const client = new OpenAI({ baseURL: `${gw.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    const via = await client.embeddings.create({ model: 'stories', input: texts });
    const direct = await srv.client.embeddings.create({ model: M, input: texts });
    via.data.forEach((d, i) => assert.deepEqual(d.embedding, direct.data[i].embedding));
    const b = await client.embeddings.create({ model: 'stories', input: texts[0], encoding_format: 'base64' });
    assert.deepEqual(Array.from(decodeBase64(b.data[0].embedding)), direct.data[0].embedding);
    const bad = await post(gw.base, '/v1/embeddings', { model: 'stories', input: '' });
    assert.equal(bad.status, 400);
  } finally {
    await gw.stop();
  }
});

await test('stop the decoder server', async () => { await srv.stop(); });

// A cross-encoder made by make-model, when this build's make-model has one.
const rr = path.join(work, 'reranker.gguf');
const made = spawnSync(bin, ['make-model', '--arch', 'bert', '--pooling', 'rank', '--n-embd', '128', '--n-layer', '2',
                                  '--n-head', '4', '--n-ff', '256', '--n-ctx', '512', '-o', rr], { encoding: 'utf8' });
if (made.status === 0 && existsSync(rr)) {
  let rs;
  await test('start pagoda serve (random bert cross-encoder)', async () => {
    rs = await Server.start(bin, rr, OpenAI, ['--max-waiting', '512']);
    M = await servedName(rs);
  });

  const query = 'where did the cat sleep';
  const docs = Array.from({ length: 100 }, (_, i) => `${texts[i % 4]} Then story ${i} ended with a nap in the sun.`);

  await test('rerank == one score request per pair; top_n is the head of the full ranking', async () => {
    const full = await post(rs.base, '/v1/rerank', { model: M, query, documents: docs });
    assert.equal(full.status, 200, JSON.stringify(full.body));
    assert.equal(full.body.results.length, docs.length);
    assert.ok(full.body.usage.total_tokens > 0);
    const separate = await pool(docs.map((d) => () => post(rs.base, '/v1/score', { model: M, text_1: query, text_2: d })), 8);
    const want = separate.map((s) => { assert.equal(s.status, 200); return s.body.data[0].score; });
    for (let k = 0; k < full.body.results.length; ++k) {
      const r = full.body.results[k];
      assert.equal(r.relevance_score, want[r.index], `doc ${r.index}`);
      assert.equal(r.document.text, docs[r.index]);
      if (k > 0) assert.ok(full.body.results[k - 1].relevance_score >= r.relevance_score);
      assert.ok(r.relevance_score > 0 && r.relevance_score < 1);
    }
    const top = await post(rs.base, '/v1/rerank', { model: M, query, documents: docs, top_n: 5, return_documents: false });
    assert.deepEqual(top.body.results, full.body.results.slice(0, 5).map(({ index, relevance_score }) => ({ index, relevance_score })));
    // Documents as objects (Cohere / Jina clients).
    const obj = await post(rs.base, '/v1/rerank', { model: M, query, documents: docs.slice(0, 3).map((text) => ({ text })) });
    assert.equal(obj.status, 200);
    // /v1/score shape, one text_1 against many.
    const s = await post(rs.base, '/v1/score', { model: M, text_1: query, text_2: docs.slice(0, 3) });
    assert.equal(s.body.object, 'list');
    assert.deepEqual(s.body.data.map((d) => d.index), [0, 1, 2]);
    s.body.data.forEach((d) => assert.equal(d.score, want[d.index]));
  });

  await test('a reranker on the wrong endpoints: 400 naming model', async () => {
    for (const [route, body] of [['/v1/embeddings', { model: M, input: 'a' }],
                                 ['/v1/chat/completions', { model: M, messages: [{ role: 'user', content: 'a' }] }],
                                 ['/v1/completions', { model: M, prompt: 'a' }]]) {
      const r = await post(rs.base, route, body);
      assert.equal(r.status, 400, `${route}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.param, 'model');
    }
  });

  await test('stop the reranker server', async () => { await rs.stop(); });
} else {
  console.log('note: make-model has no bert-reranker here; rerank checks skipped');
}

await run({ after: () => rmSync(work, { recursive: true, force: true }) });
