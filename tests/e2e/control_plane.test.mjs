// The control plane end to end: two `pagoda gateway` processes sharing one
// store (SQLite by default; PAGODA_E2E_STORE=postgres uses the run's
// PostgreSQL server, PAGODA_E2E_COUNTERS=redis a redis-server of its own)
// in front of a `pagoda serve` replica that trusts the gateways' signed
// tenant headers. Tenants and keys are made with `pagoda admin`, traffic
// goes through the official openai client and fetch.
//
//  - Keys: none, bad, revoked, expired -> 401; scoped to another model -> 403;
//    a revocation through gateway A refuses the key's next request through B.
//  - Limits: a burst through both gateways at once admits exactly the limit
//    (never limit x gateways) and refuses none below it, with OpenAI's 429
//    object, Retry-After and x-ratelimit-* headers; token reservations settle
//    to the real usage of completed, failed and cancelled requests.
//  - Ledger: per-tenant token sums equal the usage the clients were given,
//    and survive a kill -9 of the gateway that recorded them.
//  - Cache isolation: an identical prompt is not served from another
//    tenant's cache (cached_tokens 0), is within a key, is not across a
//    tenant's keys unless the tenant shares across them; tenant headers
//    forged straight to the replica are ignored.
//  - The console's JSON (/console/api/stats) on a gateway needs a key and
//    lists only the replicas of the models the key may see.
//  - Zero retention: a canary sent in prompts, system messages and tool
//    arguments, and the outputs the model gave, appear nowhere afterwards:
//    the store's files, the debug-level logs, /metrics, the admin API, the
//    error bodies of refused requests.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup, Server, freePort, sleep, makeRunner, startGateway } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const dir = mkdtempSync(join(tmpdir(), 'pagoda-cp-'));
const ADMIN = 'e2e-control-admin-key';
const SECRET = 'e2e-tenant-signing-secret-0123456789';
const CANARY = 'CANARY-7f3a9c1e-zero-retention';
process.env.PAGODA_TENANT_SECRET = SECRET;  // the replica's too
const env = { ...process.env, PAGODA_CP_ADMIN: ADMIN, PAGODA_TENANT_SECRET: SECRET, PAGODA_LOG_LEVEL: 'debug' };

let replica, gwA, gwB, storeUrl, countersUrl = '', pgDataDir = null, redis = null;
const outputs = [];   // every text the model produced (searched for afterwards)
const errorBodies = [];  // bodies of refused requests
const served = {};    // tenant -> summed usage the clients saw

// --- stores -----------------------------------------------------------------
async function makeStore() {
  if (process.env.PAGODA_E2E_STORE === 'postgres') {
    const portFile = process.env.PAGODA_E2E_PG_PORT_FILE;
    if (!portFile || !existsSync(portFile)) {
      console.log('skipped: the PostgreSQL test server is not running (PAGODA_E2E_PG_PORT_FILE)');
      process.exit(0);
    }
    const port = readFileSync(portFile, 'utf8').trim();
    const db = `pagoda_e2e_${process.pid}`;
    const r = spawnSync('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', port, '-U', 'postgres', '-d', 'postgres',
                                 '-c', `CREATE DATABASE ${db}`]);
    assert.equal(r.status, 0, `CREATE DATABASE: ${r.stderr}`);
    const dataFile = join(portFile, '..', 'datadir');
    pgDataDir = existsSync(dataFile) ? readFileSync(dataFile, 'utf8').trim() : null;
    storeUrl = `postgresql://postgres@127.0.0.1:${port}/${db}`;
    process.on('exit', () => spawnSync('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', port, '-U', 'postgres', '-d',
                                                'postgres', '-c', `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`]));
  } else {
    storeUrl = `sqlite://${join(dir, 'control.db')}`;
  }
  if (process.env.PAGODA_E2E_COUNTERS === 'redis') {
    const port = await freePort();
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
                                   '--dir', dir], { stdio: 'ignore' });
    process.on('exit', () => redis.kill('SIGKILL'));
    for (let i = 0; i < 100; ++i) {
      if (spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().includes('PONG')) break;
      await sleep(50);
    }
    countersUrl = `redis://127.0.0.1:${port}`;
  }
}

function gatewayConfig() {
  return `[gateway]\nadmin_key_env = "PAGODA_CP_ADMIN"\nallow_insecure_keys = true\nhealth_interval_ms = 200\n\n` +
         `[control]\ndb = "${storeUrl}"\ncounters = "${countersUrl}"\nsigning_secret_env = "PAGODA_TENANT_SECRET"\n\n` +
         `[[models]]\nname = "stories"\nserved_model_name = "stories260K"\npolicy = "round_robin"\n` +
         `[[models.deployments]]\nversion = "v1"\n[[models.deployments.replicas]]\nname = "r0"\n` +
         `url = "${replica.base}"\n`;
}

async function startGw(name) {
  const path = join(dir, `${name}.toml`);
  writeFileSync(path, gatewayConfig());
  return startGateway(bin, path, env);
}

// --- admin ------------------------------------------------------------------
function admin(gw, args) {
  const r = spawnSync(bin, ['admin', '--url', gw.base, '--admin-key-env', 'PAGODA_CP_ADMIN', '--json', ...args],
                      { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pagoda admin ${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function adminFetch(gw, method, path, body) {
  const r = await fetch(`${gw.base}${path}`, {
    method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, text, json: text.startsWith('{') ? JSON.parse(text) : null };
}

function tenant(gw, id, extra = []) { return admin(gw, ['tenants', 'create', id, '--name', `Tenant ${id}`, ...extra]); }
// The secret (shown once); keyIds maps it to the key's public id.
const keyIds = new Map();
function key(gw, tenantId, extra = []) {
  const k = admin(gw, ['keys', 'create', tenantId, ...extra]);
  keyIds.set(k.key, k.id);
  return k.key;
}

function client(gw, apiKey) {
  return new OpenAI({ baseURL: `${gw.base}/v1`, apiKey, maxRetries: 0, timeout: 60000 });
}

function note(tenantId, usage, text) {
  const s = (served[tenantId] ??= { prompt: 0, completion: 0, requests: 0 });
  s.prompt += usage.prompt_tokens;
  s.completion += usage.completion_tokens;
  s.requests += 1;
  if (text) outputs.push(text);
}

async function chat(gw, apiKey, tenantId, content, extra = {}) {
  const { data, response } = await client(gw, apiKey).chat.completions
    .create({ model: 'stories', messages: [{ role: 'user', content }], max_tokens: 32, temperature: 0, ...extra })
    .withResponse();
  note(tenantId, data.usage, data.choices[0].message.content);
  return { data, headers: response.headers };
}

async function raw(gw, apiKey, body) {
  const headers = { 'content-type': 'application/json' };
  if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  const r = await fetch(`${gw.base}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 200) errorBodies.push(text);
  return { status: r.status, headers: r.headers, text, json: text.startsWith('{') ? JSON.parse(text) : null };
}

// Starts a burst when at least `needMs` remain in the current fixed minute
// window (the counters' windows are aligned to the epoch).
// Until the gateway's replicas report no active request (15 s at most).
async function untilIdle(gw) {
  const end = Date.now() + 15000;
  while (Date.now() < end) {
    const text = await (await fetch(`${gw.base}/metrics`)).text();
    const active = [...text.matchAll(/^pagoda_gateway_replica_active_requests\{[^}]*\} (\S+)$/gm)]
      .reduce((n, m) => n + Number(m[1]), 0);
    if (active === 0) break;
    await sleep(50);
  }
  await sleep(100);
}

async function awaitWindow(needMs) {
  const left = 60000 - (Date.now() % 60000);
  if (left < needMs) await sleep(left + 200);
}

const body = (content, extra = {}) =>
  ({ model: 'stories', messages: [{ role: 'user', content }], max_tokens: 8, temperature: 0, ...extra });

// --- tests ------------------------------------------------------------------
test('keys: none, bad, revoked (through the other gateway), expired and out of scope are refused', async () => {
  tenant(gwA, 'keys-t');
  const good = key(gwA, 'keys-t');
  const scoped = key(gwA, 'keys-t', ['--models', 'another-model']);
  const ok = await chat(gwA, good, 'keys-t', 'Once upon a time');
  assert.equal(ok.data.object, 'chat.completion');
  for (const [k, status, code] of [[undefined, 401, 'missing_api_key'], ['pgd-not-a-real-key', 401, 'invalid_api_key'],
                                   ["' OR 1=1 --", 401, 'invalid_api_key'], ['x'.repeat(5000), 401, 'invalid_api_key'],
                                   [scoped, 403, 'model_not_allowed']]) {
    const r = await raw(gwB, k, body(`${CANARY} refused`));
    assert.equal(r.status, status, r.text);
    assert.equal(r.json.error.code, code);
  }
  // Revoked through A: B refuses the key on its very next request.
  const victim = key(gwA, 'keys-t');
  const before = await raw(gwB, victim, body('hello'));
  assert.equal(before.status, 200);
  note('keys-t', before.json.usage, before.json.choices[0].message.content);
  admin(gwA, ['keys', 'revoke', keyIds.get(victim)]);
  const after = await raw(gwB, victim, body('hello again'));
  assert.equal(after.status, 401, after.text);
  // Expired: a 1-second key.
  const shortLived = key(gwA, 'keys-t', ['--ttl-seconds', '1']);
  await sleep(1500);
  assert.equal((await raw(gwB, shortLived, body('late'))).status, 401);
  // Nothing listed shows a secret or a hash.
  const text = JSON.stringify(admin(gwB, ['keys', 'list', '--tenant', 'keys-t']));
  for (const secret of [good, scoped, victim, shortLived]) assert.ok(!text.includes(secret));
  assert.ok(!/[0-9a-f]{64}/.test(text), 'a key hash is listed');
});

test("the console's figures on a gateway: a key is needed, and a key sees only its models' replicas", async () => {
  tenant(gwA, 'console-t');
  const stats = (k) => fetch(`${gwA.base}/console/api/stats`, { headers: k ? { authorization: `Bearer ${k}` } : {} });
  assert.equal((await stats()).status, 401);
  assert.equal((await stats('pgd-not-a-real-key')).status, 401);
  const all = await (await stats(key(gwA, 'console-t'))).json();
  assert.equal(all.kind, 'gateway');
  assert.deepEqual(all.replicas.map(r => r.id), ['r0']);
  assert.equal(all.replicas[0].url, undefined, 'no replica address for a tenant');
  const other = await (await stats(key(gwA, 'console-t', ['--models', 'another-model']))).json();
  assert.deepEqual(other.replicas, []);
  // The admin key is not an API key here.
  assert.equal((await stats(ADMIN)).status, 401);
});

test('limits: a burst through both gateways admits exactly the limit, with OpenAI headers', async () => {
  tenant(gwA, 'burst-t');
  const k = key(gwA, 'burst-t');
  const LIMIT = 7, N = 16;
  admin(gwA, ['limits', 'set', '--tenant', 'burst-t', '--rpm', String(LIMIT)]);
  await awaitWindow(20000);
  const results = await Promise.all(Array.from({ length: N }, (_, i) =>
    raw(i % 2 ? gwA : gwB, k, body(`burst ${i}`, { max_tokens: 2 }))));
  const okCount = results.filter(r => r.status === 200).length;
  const refused = results.filter(r => r.status === 429);
  assert.equal(okCount, LIMIT, `admitted ${okCount} of ${N} with limit ${LIMIT}`);
  assert.equal(refused.length, N - LIMIT);
  for (const r of results.filter(r => r.status === 200)) note('burst-t', r.json.usage, r.json.choices[0].message.content);
  const r = refused[0];
  assert.equal(r.json.error.type, 'requests');
  assert.equal(r.json.error.code, 'rate_limit_exceeded');
  assert.ok(Number(r.headers.get('retry-after')) >= 1);
  assert.equal(r.headers.get('x-ratelimit-limit-requests'), String(LIMIT));
  assert.equal(r.headers.get('x-ratelimit-remaining-requests'), '0');
  assert.match(r.headers.get('x-ratelimit-reset-requests'), /^(\d+m)?[\d.]+s$|^\d+ms$/);
  // None refused below the limit: a fresh tenant with the same limit, LIMIT requests, all admitted.
  tenant(gwA, 'below-t');
  const k2 = key(gwA, 'below-t');
  admin(gwA, ['limits', 'set', '--key', keyIds.get(k2), '--rpm', String(LIMIT)]);
  await awaitWindow(20000);
  const below = await Promise.all(Array.from({ length: LIMIT }, (_, i) =>
    raw(i % 2 ? gwA : gwB, k2, body(`below ${i}`, { max_tokens: 2 }))));
  assert.deepEqual(below.map(r => r.status), Array(LIMIT).fill(200));
  for (const r of below) note('below-t', r.json.usage, r.json.choices[0].message.content);
});

test('limits: token reservations settle to real usage for completed, failed and cancelled requests', async () => {
  tenant(gwA, 'tpm-t');
  const k = key(gwA, 'tpm-t');
  const TPM = 100000;
  admin(gwA, ['limits', 'set', '--tenant', 'tpm-t', '--tpm', String(TPM)]);
  await awaitWindow(30000);
  // 1: completed. Its own response shows the reservation (prompt + max_tokens) taken.
  const first = await raw(gwA, k, body('Once upon a time', { max_tokens: 20 }));
  assert.equal(first.status, 200);
  note('tpm-t', first.json.usage, first.json.choices[0].message.content);
  let used = first.json.usage.total_tokens;
  // 2: cancelled mid-stream (the client leaves after two chunks).
  const ctl = new AbortController();
  const res = await fetch(`${gwB.base}/v1/chat/completions`, {
    method: 'POST', signal: ctl.signal,
    headers: { authorization: `Bearer ${k}`, 'content-type': 'application/json' },
    body: JSON.stringify(body('The dog ran', { max_tokens: 200, stream: true })),
  });
  const reader = res.body.getReader();
  let chunks = 0, buf = '';
  while (chunks < 3) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += Buffer.from(value).toString();
    chunks = (buf.match(/"choices"/g) ?? []).length;
  }
  ctl.abort();
  // The reservation settles when the gateway sees the stream end; on a loaded
  // machine that can take longer than a fixed pause: wait until gwB has no
  // request in flight.
  await untilIdle(gwB);
  // 3: failed (a prompt longer than the context: the replica answers 400 after admission).
  const failed = await raw(gwA, k, body('word '.repeat(5000), { max_tokens: 5 }));
  assert.equal(failed.status, 400, failed.text);
  await sleep(300);
  // The next admission's headers show what is charged now: the real usage so
  // far plus this request's own reservation (prompt estimate + max_tokens).
  const probe = await raw(gwB, k, body('x', { max_tokens: 50 }));
  assert.equal(probe.status, 200);
  note('tpm-t', probe.json.usage, probe.json.choices[0].message.content);
  const remaining = Number(probe.headers.get('x-ratelimit-remaining-tokens'));
  const charged = TPM - remaining;
  // Reservations of 200 and 5000+ tokens are not charged: what remains of
  // them is the cancelled stream's few tokens and the failed request's 0.
  const usage = admin(gwA, ['usage', '--tenant', 'tpm-t', '--group-by', 'tenant']);
  const ledgerTokens = usage.total.prompt_tokens + usage.total.completion_tokens;
  assert.ok(charged >= used && charged < used + 200 + 60, `charged ${charged}, completed used ${used}`);
  assert.ok(ledgerTokens >= used, `ledger ${ledgerTokens}`);
});

test('cache isolation: tenants, keys and sharing; forged headers straight to the replica are ignored', async () => {
  tenant(gwA, 'iso-a');
  tenant(gwA, 'iso-b');
  tenant(gwA, 'iso-s', ['--share-cache', 'true']);
  const a1 = key(gwA, 'iso-a'), a2 = key(gwA, 'iso-a'), b1 = key(gwA, 'iso-b');
  const s1 = key(gwA, 'iso-s'), s2 = key(gwA, 'iso-s');
  const prompt = 'The quiet library kept its old books on tall shelves, and every evening the keeper walked ' +
                 'between them with a small lamp, reading the titles aloud to the sleeping cat. '.repeat(3);
  const cached = async (gw, k, t) => (await chat(gw, k, t, prompt)).data.usage.prompt_tokens_details?.cached_tokens ?? 0;
  assert.equal(await cached(gwA, a1, 'iso-a'), 0);
  assert.ok(await cached(gwB, a1, 'iso-a') > 0, 'the same key hits its own cache');
  assert.equal(await cached(gwA, b1, 'iso-b'), 0, 'another tenant never hits');
  assert.equal(await cached(gwB, a2, 'iso-a'), 0, "another key of the tenant does not hit unless it shares");
  assert.equal(await cached(gwA, s1, 'iso-s'), 0);
  assert.ok(await cached(gwB, s2, 'iso-s') > 0, 'a sharing tenant hits across its keys');
  // Straight to the replica, claiming iso-a's scope with a made-up signature: no hit.
  const forged = await fetch(`${replica.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-pagoda-tenant': 'iso-a', 'x-pagoda-plan': 'provisioned',
               'x-pagoda-priority': '5', 'x-pagoda-weight': '100', 'x-pagoda-cache-scope': 't:iso-a/k:whatever',
               'x-pagoda-timestamp': String(Math.floor(Date.now() / 1000)), 'x-request-id': 'forged-1',
               'x-pagoda-key-id': '', 'x-pagoda-signature': 'ab'.repeat(32) },
    body: JSON.stringify(body(prompt, { model: 'stories260K', max_tokens: 4 })),
  });
  const fj = await forged.json();
  assert.equal(forged.status, 200);
  assert.equal(fj.usage.prompt_tokens_details?.cached_tokens ?? 0, 0);
  outputs.push(fj.choices[0].message.content);
});

test('ledger: token sums equal what clients were given, and survive kill -9 of the gateway', async () => {
  tenant(gwA, 'ledger-t');
  const k = key(gwA, 'ledger-t');
  for (let i = 0; i < 6; ++i) await chat(i % 2 ? gwA : gwB, k, 'ledger-t', `${CANARY} story number ${i}`);
  // Streamed with usage asked for, and without (the gateway meters both).
  for (const include of [true, false]) {
    const stream = await client(gwA, k).chat.completions.create({
      model: 'stories', messages: [{ role: 'user', content: 'A streamed tale' }], max_tokens: 10, temperature: 0,
      stream: true, ...(include ? { stream_options: { include_usage: true } } : {}) });
    let text = '', usage = null, usageChunks = 0;
    for await (const c of stream) {
      if (c.usage) { usage = c.usage; ++usageChunks; }
      text += c.choices[0]?.delta?.content ?? '';
    }
    assert.equal(usageChunks, include ? 1 : 0, 'the usage chunk reaches only clients that asked for it');
    if (include) note('ledger-t', usage, text);
    else { outputs.push(text); }
  }
  await sleep(300);  // the ledger writes every 50 ms
  gwA.kill('SIGKILL');
  await new Promise(r => gwA.proc.on('exit', r));
  gwA = await startGw('a');
  const report = admin(gwA, ['usage', '--tenant', 'ledger-t', '--group-by', 'tenant']);
  const row = report.rows.find(r => r.tenant === 'ledger-t' || r.tenant_id === 'ledger-t');
  assert.ok(row, JSON.stringify(report));
  // The un-asked-for stream is in the ledger but its usage was not shown: 8 requests in all.
  assert.equal(row.requests, served['ledger-t'].requests + 1);
  assert.ok(row.prompt_tokens >= served['ledger-t'].prompt);
  assert.ok(row.completion_tokens >= served['ledger-t'].completion);
  // Every tenant: what the ledger holds for completed requests equals what clients saw.
  for (const t of ['keys-t', 'below-t']) {
    const rep = admin(gwA, ['usage', '--tenant', t, '--group-by', 'tenant']);
    assert.equal(rep.total.prompt_tokens, served[t].prompt, `${t} prompt tokens`);
    assert.equal(rep.total.completion_tokens, served[t].completion, `${t} completion tokens`);
  }
});

test('zero retention: the canary and the outputs appear in no file, log, metric, admin answer or error', async () => {
  // Tool arguments and a system message carry the canary too.
  tenant(gwA, 'zr-t');
  const k = key(gwA, 'zr-t');
  await chat(gwA, k, 'zr-t', `Please ${CANARY}`, {
    messages: [{ role: 'system', content: `System ${CANARY}` }, { role: 'user', content: `User ${CANARY}` },
               { role: 'assistant', content: null,
                 tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: `{"q":"${CANARY}"}` } }] },
               { role: 'tool', tool_call_id: 'call_1', content: `Result ${CANARY}` }],
    tools: [{ type: 'function', function: { name: 'lookup', description: CANARY, parameters: { type: 'object' } } }],
  });
  // Refused requests carrying the canary: no key, bad key, rate limited.
  admin(gwA, ['limits', 'set', '--tenant', 'zr-t', '--rpm', '1']);
  await sleep(100);
  for (let i = 0; i < 3; ++i) await raw(gwB, k, body(`${CANARY} over the limit`));
  await raw(gwB, undefined, body(`${CANARY} no key`));
  await sleep(300);
  const needles = [CANARY, ...outputs.filter(t => t && t.trim().length >= 20)];
  assert.ok(needles.length > 3, 'too few distinctive outputs to search for');
  const hay = [];
  hay.push(['gateway A log', gwA.stderr], ['gateway B log', gwB.stderr]);
  for (const g of [gwA, gwB]) {
    hay.push(['metrics', await (await fetch(`${g.base}/metrics`)).text()]);
    for (const p of ['/admin/tenants', '/admin/keys?tenant=zr-t', '/admin/usage?group_by=tenant,key,model,day',
                     '/admin/usage?format=csv', '/admin/sla', '/admin/limits?tenant=zr-t']) {
      hay.push([p, (await adminFetch(g, 'GET', p)).text]);
    }
  }
  for (const b of errorBodies) hay.push(['error body', b]);
  for (const [what, text] of hay) {
    for (const n of needles) assert.ok(!text.includes(n), `${what} contains ${JSON.stringify(n.slice(0, 40))}`);
  }
  // Store files: the SQLite main file and its WAL, or PostgreSQL's data directory.
  const files = [];
  const walk = (d) => { for (const f of readdirSync(d)) { const p = join(d, f); statSync(p).isDirectory() ? walk(p) : files.push(p); } };
  if (pgDataDir) {
    spawnSync('psql', ['-X', '-q', '-h', '127.0.0.1', '-p', new URL(storeUrl).port, '-U', 'postgres', '-c', 'CHECKPOINT']);
    try { walk(pgDataDir); } catch {}  // (as root the data directory is readable)
  } else {
    for (const f of readdirSync(dir)) if (f.startsWith('control.db')) files.push(join(dir, f));
    assert.ok(files.some(f => f.endsWith('-wal')) || files.length >= 1);
  }
  assert.ok(files.length > 0, 'no store files to scan');
  for (const f of files) {
    let bytes;
    try { bytes = readFileSync(f); } catch { continue; }
    for (const n of needles) assert.ok(!bytes.includes(Buffer.from(n)), `${f} contains ${JSON.stringify(n.slice(0, 40))}`);
  }
});

test('pagoda serve --db: the same control plane inside one server (keys, limits, ledger, isolation)', async () => {
  const db = `sqlite://${join(dir, 'serve.db')}`;
  process.env.PAGODA_CP_ADMIN = ADMIN;
  const s = await Server.start(bin, modelPath, OpenAI, ['--db', db, '--admin-key-env', 'PAGODA_CP_ADMIN',
                                                       '--allow-insecure-keys']);
  try {
    const gw = { base: s.base };
    tenant(gw, 'solo-a');
    tenant(gw, 'solo-b');
    const a = key(gw, 'solo-a'), b = key(gw, 'solo-b');
    const post = (k, content, extra = {}) => fetch(`${s.base}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...(k ? { authorization: `Bearer ${k}` } : {}) },
      body: JSON.stringify({ model: 'stories260K', messages: [{ role: 'user', content }], max_tokens: 8,
                             temperature: 0, ...extra }) });
    assert.equal((await post(undefined, 'x')).status, 401);
    assert.equal((await post('pgd-wrong', 'x')).status, 401);
    assert.equal((await fetch(`${s.base}/v1/models`)).status, 401);
    assert.equal((await fetch(`${s.base}/v1/models`, { headers: { authorization: `Bearer ${a}` } })).status, 200);
    const prompt = 'A long shared story opening about a lighthouse keeper and her small grey dog. '.repeat(3);
    let prompt_sum = 0, completion_sum = 0;
    const cachedOf = async (k) => {
      const j = await (await post(k, prompt)).json();
      prompt_sum += j.usage.prompt_tokens; completion_sum += j.usage.completion_tokens;
      return j.usage.prompt_tokens_details?.cached_tokens ?? 0;
    };
    assert.equal(await cachedOf(a), 0);
    assert.ok(await cachedOf(a) > 0);
    assert.equal(await cachedOf(b), 0, 'another tenant never hits');
    // Admitted responses carry the x-ratelimit-* headers (as the gateway
    // sends them), streamed or not, and their remaining figures fall.
    admin(gw, ['limits', 'set', '--tenant', 'solo-a', '--rpm', '100', '--tpm', '100000']);
    await awaitWindow(15000);
    const seen = [];
    for (const stream of [false, true, false, true]) {
      const r = await post(a, 'rate limit headers', stream ? { stream: true, stream_options: { include_usage: true } } : {});
      assert.equal(r.status, 200);
      const h = (n) => r.headers.get(`x-ratelimit-${n}`);
      for (const n of ['limit-requests', 'remaining-requests', 'reset-requests', 'limit-tokens', 'remaining-tokens',
                       'reset-tokens']) {
        assert.ok(h(n) !== null, `x-ratelimit-${n} missing on a ${stream ? 'streamed' : 'plain'} response`);
      }
      assert.equal(h('limit-requests'), '100');
      assert.equal(h('limit-tokens'), '100000');
      assert.match(h('reset-requests'), /^(\d+h)?(\d+m)?[\d.]+m?s$/);
      seen.push({ requests: Number(h('remaining-requests')), tokens: Number(h('remaining-tokens')) });
      const text = await r.text();
      if (stream) {
        const usage = text.split('\n').filter(l => l.startsWith('data: {')).map(l => JSON.parse(l.slice(6)))
          .find(j => j.usage)?.usage;
        assert.ok(usage, 'no usage chunk');
        prompt_sum += usage.prompt_tokens; completion_sum += usage.completion_tokens;
      } else {
        const j = JSON.parse(text);
        prompt_sum += j.usage.prompt_tokens; completion_sum += j.usage.completion_tokens;
      }
    }
    for (let i = 1; i < seen.length; ++i) {
      assert.equal(seen[i].requests, seen[i - 1].requests - 1, JSON.stringify(seen));
      assert.ok(seen[i].tokens < seen[i - 1].tokens, JSON.stringify(seen));
    }
    assert.ok(seen[0].requests >= 96 && seen[0].requests <= 99, JSON.stringify(seen));
    admin(gw, ['limits', 'set', '--tenant', 'solo-b', '--rpm', '1']);
    await awaitWindow(10000);
    const statuses = [];
    for (let i = 0; i < 3; ++i) {
      const r = await post(b, `limited ${i}`);
      statuses.push(r.status);
      if (r.status === 200) { const j = await r.json(); prompt_sum += j.usage.prompt_tokens; completion_sum += j.usage.completion_tokens; }
    }
    assert.ok(statuses.filter(x => x === 429).length >= 2, JSON.stringify(statuses));
    await sleep(300);
    const rep = admin(gw, ['usage', '--group-by', 'tenant']);
    assert.equal(rep.total.prompt_tokens, prompt_sum);
    assert.equal(rep.total.completion_tokens, completion_sum);
  } finally {
    await s.stop();
  }
});

await run({
  before: async () => {
    replica = await Server.start(bin, modelPath, OpenAI, ['--tenant-secret-env', 'PAGODA_TENANT_SECRET']);
    await makeStore();
    gwA = await startGw('a');
    gwB = await startGw('b');
  },
  after: async () => {
    for (const g of [gwA, gwB]) await g?.stop();
    await replica?.stop();
  },
});
