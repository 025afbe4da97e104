// The Files and Batch APIs on `pagoda serve --data-dir` with its control
// plane (--db): the official openai client's files and batches calls, a
// 200-line batch (malformed lines, duplicate ids) that survives kill -9 and
// a restart with every valid line answered exactly once and the ledger equal
// to the output's usage, cancel with partial results, bad input, tenant
// isolation, and zero retention once the files are deleted.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { setup, Server, sleep, makeRunner, assertErrorShape, startGateway } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { toFile } = await import('openai');
const { test, run } = makeRunner();
const dir = mkdtempSync(join(tmpdir(), 'pagoda-batch-'));
const ADMIN = 'e2e-batch-admin-key';
const CANARY = 'CANARY-b7e1-batch-zero-retention';
process.env.PAGODA_CP_ADMIN = ADMIN;
const env = { ...process.env, PAGODA_CP_ADMIN: ADMIN };
const dbUrl = `sqlite://${join(dir, 'control.db')}`;
const dataDir = join(dir, 'data');
const MODEL = 'stories260K';

let server;
const keys = {};
const start = () => Server.start(bin, modelPath, OpenAI, [
  '--db', dbUrl, '--admin-key-env', 'PAGODA_CP_ADMIN', '--allow-insecure-keys', '--data-dir', dataDir,
  '--batch-in-flight', '8', '--max-file-mib', '1']);

function admin(args) {
  const r = spawnSync(bin, ['admin', '--url', server.base, '--admin-key-env', 'PAGODA_CP_ADMIN', '--json', ...args],
                      { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pagoda admin ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}
const client = (who) => new OpenAI({ baseURL: `${server.base}/v1`, apiKey: keys[who], maxRetries: 0, timeout: 60000 });

function chatLine(id, content, extra = {}) {
  return JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions',
                          body: { model: MODEL, messages: [{ role: 'user', content }], max_tokens: 48, temperature: 0,
                                  ...extra } });
}

async function upload(who, text, name = 'input.jsonl') {
  return client(who).files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });
}

async function waitBatch(who, id, pred, timeoutMs = 120000) {
  const t0 = Date.now();
  let b;
  do {
    b = await client(who).batches.retrieve(id);
    if (pred(b)) return b;
    await sleep(20);
  } while (Date.now() - t0 < timeoutMs);
  throw new Error(`batch ${id} stuck: ${JSON.stringify(b)}`);
}

async function contentLines(who, fileId) {
  if (!fileId) return [];
  const text = await (await client(who).files.content(fileId)).text();
  return text.split('\n').filter(Boolean).map(l => JSON.parse(l));
}

test('200 lines, malformed and duplicate ones among them, kill -9 mid-run: each valid line answered once', async () => {
  const lines = [];
  const expectValid = new Set(), expectBad = [];
  for (let i = 0; i < 200; ++i) {
    const id = `req-${i}`;
    if (i % 40 === 7) { lines.push('{"custom_id": "broken-' + i + '", "method": "POST", '); expectBad.push(null); continue; }
    if (i % 40 === 13) { lines.push(chatLine(id, 'x').replace('/v1/chat/completions', '/v1/embeddings')); expectBad.push(id); continue; }
    if (i % 40 === 19) { lines.push(chatLine(id, 'x').replace('"POST"', '"GET"')); expectBad.push(id); continue; }
    if (i % 40 === 23) { lines.push(chatLine(id, 'x', { max_tokens: -1 })); expectBad.push(id); continue; }
    if (i % 40 === 29) { lines.push(chatLine(`req-${i - 1}`, 'dup')); expectBad.push(`req-${i - 1}`); continue; }
    lines.push(chatLine(id, `${CANARY} Once upon a time number ${i}, a little`));
    expectValid.add(id);
  }
  assert.equal(expectValid.size + expectBad.length, 200);
  const f = await upload('a', lines.join('\n') + '\n');
  assert.equal(f.object, 'file');
  assert.equal(f.purpose, 'batch');
  const b = await client('a').batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions',
                                               completion_window: '24h', metadata: { run: 'kill9' } });
  assert.equal(b.status, 'validating');
  assert.deepEqual(b.metadata, { run: 'kill9' });
  const mid = await waitBatch('a', b.id, x => x.request_counts.completed >= 20);
  assert.ok(mid.request_counts.completed < expectValid.size, 'the batch finished before the kill: make it longer');
  server.proc.kill('SIGKILL');
  await new Promise(r => server.proc.on('exit', r));
  server = await start();
  const done = await waitBatch('a', b.id, x => ['completed', 'failed', 'expired', 'cancelled'].includes(x.status));
  assert.equal(done.status, 'completed', JSON.stringify(done));
  assert.deepEqual(done.request_counts, { total: 200, completed: expectValid.size, failed: expectBad.length });
  for (const k of ['created_at', 'in_progress_at', 'finalizing_at', 'completed_at']) assert.equal(typeof done[k], 'number', k);
  const out = await contentLines('a', done.output_file_id);
  assert.equal(out.length, expectValid.size);
  const seen = new Set();
  let prompt = 0, completion = 0;
  for (const l of out) {
    assert.ok(expectValid.has(l.custom_id), l.custom_id);
    assert.ok(!seen.has(l.custom_id), `answered twice: ${l.custom_id}`);
    seen.add(l.custom_id);
    assert.equal(l.response.status_code, 200);
    assert.equal(l.error, null);
    assert.equal(l.response.body.object, 'chat.completion');
    assert.ok(l.id.startsWith('batch_req_'));
    prompt += l.response.body.usage.prompt_tokens;
    completion += l.response.body.usage.completion_tokens;
  }
  const err = await contentLines('a', done.error_file_id);
  assert.equal(err.length, expectBad.length);
  assert.deepEqual(err.map(e => e.custom_id), expectBad);
  for (const e of err) { assert.equal(e.response, null); assert.ok(e.error.code && e.error.message); }
  // The ledger holds exactly the output's usage, once per line.
  const rep = admin(['usage', '--tenant', 'bt-a', '--group-by', 'tenant']);
  assert.equal(rep.total.prompt_tokens, prompt);
  assert.equal(rep.total.completion_tokens, completion);
  assert.equal(rep.total.requests, expectValid.size);
  // Zero retention: with the input, output and error files deleted, the
  // canary and the answers are in no file of the data directory or the store.
  const needles = [CANARY, out[0].response.body.choices[0].message.content];
  for (const id of [f.id, done.output_file_id, done.error_file_id]) {
    const del = await client('a').files.delete(id);
    assert.equal(del.deleted, true);
  }
  await server.stop();  // checkpoints the store's WAL
  server = await start();
  const files = [];
  const walk = (d) => { for (const n of readdirSync(d)) { const p = join(d, n); statSync(p).isDirectory() ? walk(p) : files.push(p); } };
  walk(dir);
  for (const p of files) {
    const bytes = readFileSync(p);
    for (const n of needles) assert.ok(!bytes.includes(Buffer.from(n)), `${p} holds ${n.slice(0, 30)}`);
  }
});

test('the openai client: upload, list with pagination, create, retrieve, list batches, cancel, content', async () => {
  const c = client('a');
  const ids = [];
  for (let i = 0; i < 3; ++i) ids.push((await upload('a', chatLine(`p${i}`, `hello ${i}`) + '\n', `p${i}.jsonl`)).id);
  const listed = [];
  for await (const f of c.files.list({ limit: 2, purpose: 'batch' })) listed.push(f.id);
  for (const id of ids) assert.ok(listed.includes(id), `files.list lacks ${id}`);
  assert.equal(new Set(listed).size, listed.length);
  const got = await c.files.retrieve(ids[0]);
  assert.equal(got.filename, 'p0.jsonl');
  assert.equal(await (await c.files.content(ids[0])).text(), chatLine('p0', 'hello 0') + '\n');
  const batches = [];
  for (const id of ids) batches.push(await c.batches.create({ input_file_id: id, endpoint: '/v1/chat/completions', completion_window: '24h' }));
  const all = [];
  for await (const b of c.batches.list({ limit: 1 })) all.push(b.id);
  for (const b of batches) assert.ok(all.includes(b.id));
  const first = await c.batches.list({ limit: 1 });
  assert.equal(first.data.length, 1);
  assert.equal(first.has_more, true);
  const done = await waitBatch('a', batches[0].id, x => x.status === 'completed');
  const out = await contentLines('a', done.output_file_id);
  assert.equal(out.length, 1);
  assert.equal(out[0].custom_id, 'p0');
  // Cancelling a finished batch is refused; an unknown one is 404.
  await assert.rejects(c.batches.cancel(done.id), (e) => e.status === 409);
  await assert.rejects(c.batches.retrieve('batch_000000000000000000000000'), (e) => e.status === 404);
});

test('cancel stops a running batch promptly and reports partial results', async () => {
  const lines = [];
  for (let i = 0; i < 120; ++i) lines.push(chatLine(`c${i}`, `A story about cancel ${i}`, { max_tokens: 64 }));
  const f = await upload('a', lines.join('\n'));
  const b = await client('a').batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  await waitBatch('a', b.id, x => x.request_counts.completed >= 5);
  const t0 = Date.now();
  const c = await client('a').batches.cancel(b.id);
  assert.ok(['cancelling', 'cancelled'].includes(c.status), c.status);
  const done = await waitBatch('a', b.id, x => x.status === 'cancelled', 30000);
  assert.ok(Date.now() - t0 < 10000, `cancel took ${Date.now() - t0} ms`);
  assert.ok(done.request_counts.completed > 0 && done.request_counts.completed < 120, JSON.stringify(done.request_counts));
  assert.equal(done.request_counts.completed + done.request_counts.failed, 120);
  assert.equal(typeof done.cancelling_at, 'number');
  assert.equal(typeof done.cancelled_at, 'number');
  const out = await contentLines('a', done.output_file_id);
  const err = await contentLines('a', done.error_file_id);
  assert.equal(out.length, done.request_counts.completed);
  assert.equal(err.length, done.request_counts.failed);
  assert.ok(err.every(e => e.error.code === 'batch_cancelled'));
});

test('bad input: malformed bodies, unknown ids, other tenants, oversized files', async () => {
  const post = (path, body, who = 'a', headers = { 'content-type': 'application/json' }) =>
    fetch(`${server.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${keys[who]}`, ...headers }, body });
  const get = (path, who = 'a') => fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${keys[who]}` } });
  const expect = async (resp, status, what) => {
    assert.equal(resp.status, status, what);
    assertErrorShape(assert, await resp.json(), what);
  };
  await expect(await post('/v1/batches', '{not json'), 400, 'malformed JSON');
  await expect(await post('/v1/batches', JSON.stringify({ endpoint: '/v1/chat/completions', completion_window: '24h' })), 400, 'no input_file_id');
  const f = await upload('a', chatLine('z', 'zz'));
  await expect(await post('/v1/batches', JSON.stringify({ input_file_id: f.id, endpoint: '/v1/embeddings', completion_window: '24h' })), 400, 'endpoint');
  await expect(await post('/v1/batches', JSON.stringify({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '1h' })), 400, 'window');
  await expect(await post('/v1/batches', JSON.stringify({ input_file_id: 'file-nope', endpoint: '/v1/chat/completions', completion_window: '24h' })), 404, 'unknown file');
  await expect(await get('/v1/files/file-nope'), 404, 'unknown file id');
  await expect(await get('/v1/batches/batch_nope'), 404, 'unknown batch id');
  await expect(await post('/v1/files', 'plain', 'a', { 'content-type': 'text/plain' }), 400, 'not multipart');
  await assert.rejects(client('a').files.create({ file: await toFile(Buffer.from('x'), 'x.jsonl'), purpose: 'fine-tune' }), (e) => e.status === 400);
  await assert.rejects(upload('a', '\n\n'), (e) => e.status === 400);
  await assert.rejects(upload('a', 'x'.repeat(1100 * 1024)), (e) => e.status === 413);
  // Another tenant: 404 for the file, its content and a batch, never the bytes.
  const b = await client('a').batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
  for (const p of [`/v1/files/${f.id}`, `/v1/files/${f.id}/content`, `/v1/batches/${b.id}`]) {
    const r = await get(p, 'b');
    assert.equal(r.status, 404, p);
    assert.ok(!(await r.text()).includes('zz'), p);
  }
  await expect(await post(`/v1/batches/${b.id}/cancel`, '', 'b'), 404, 'cancel another tenant\'s');
  await expect(await post('/v1/batches', JSON.stringify({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' }), 'b'), 404, 'another tenant\'s file');
  const theirs = [];
  for await (const x of client('b').files.list()) theirs.push(x.id);
  assert.ok(!theirs.includes(f.id));
  // No key: 401.
  assert.equal((await fetch(`${server.base}/v1/files`)).status, 401);
});

test('pagoda gateway --data-dir: the same calls through the gateway, lines spread over its replicas', async () => {
  const replicas = await Promise.all([0, 1].map(() => Server.start(bin, modelPath, OpenAI)));
  const configPath = join(dir, 'gateway.toml');
  let cfg = `[gateway]\nhealth_interval_ms = 200\n\n[[models]]\nname = "stories"\npolicy = "round_robin"\n` +
            `served_model_name = "stories260K"\n[[models.deployments]]\nversion = "v1"\n`;
  replicas.forEach((r, i) => { cfg += `[[models.deployments.replicas]]\nurl = "${r.base}"\nname = "r${i}"\n`; });
  writeFileSync(configPath, cfg);
  const gw = await startGateway(bin, configPath, process.env, ['--data-dir', join(dir, 'gw-data'), '--batch-in-flight', '8']);
  try {
    const c = new OpenAI({ baseURL: `${gw.base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
    const lines = [];
    for (let i = 0; i < 24; ++i) lines.push(chatLine(`g${i}`, `Gateway story ${i}`).replace(`"model":"${MODEL}"`, '"model":"stories"'));
    const f = await c.files.create({ file: await toFile(Buffer.from(lines.join('\n')), 'gw.jsonl'), purpose: 'batch' });
    const listed = [];
    for await (const x of c.files.list({ limit: 1 })) listed.push(x.id);
    assert.ok(listed.includes(f.id));
    const b = await c.batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    let done;
    for (let i = 0; i < 6000; ++i) {
      done = await c.batches.retrieve(b.id);
      if (['completed', 'failed', 'cancelled', 'expired'].includes(done.status)) break;
      await sleep(20);
    }
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(done.request_counts.completed, 24);
    const out = (await (await c.files.content(done.output_file_id)).text()).split('\n').filter(Boolean).map(l => JSON.parse(l));
    assert.deepEqual(out.map(l => l.custom_id).sort(), lines.map((_, i) => `g${i}`).sort());
    const served = [];
    for (const r of replicas) served.push((await r.metrics()).request_success_total ?? 0);
    assert.ok(served.every(n => n > 0), `every replica answers some lines: ${served}`);
    const all = [];
    for await (const x of c.batches.list({ limit: 1 })) all.push(x.id);
    assert.ok(all.includes(b.id));
    await assert.rejects(c.batches.cancel(b.id), (e) => e.status === 409);
  } finally {
    await gw.stop();
    for (const r of replicas) await r.stop();
  }
});

await run({
  before: async () => {
    server = await start();
    for (const who of ['a', 'b']) {
      admin(['tenants', 'create', `bt-${who}`, '--name', `Batch tenant ${who}`]);
      keys[who] = admin(['keys', 'create', `bt-${who}`]).key;
    }
  },
  after: async () => { await server?.stop(); },
});
