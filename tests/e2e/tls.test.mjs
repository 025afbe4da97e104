// https on `pagoda serve --tls-cert/--tls-key` and on `pagoda gateway`
// ([gateway] tls_cert / tls_key), with a throwaway CA made here with the
// openssl CLI. The official openai client talks to both over https, trusting
// the CA through a custom fetch (node:https with `ca`) and, in a child
// process, through NODE_EXTRA_CA_CERTS with its stock fetch. Checks: chat and
// streamed chat on serve, through the gateway to a plain HTTP replica and to
// a `pagoda serve --tls-cert` replica (ca_file); plain HTTP to either TLS
// port gets a 400 and the server stays healthy; a client trusting another CA
// (or only the system store) fails verification; SIGHUP reloads the
// certificate (new connections see the new serial) and refuses a broken one
// (the old one stays); each failed handshake (plain HTTP, a client refusing
// the certificate) counts in pagoda:tls_handshake_failures_total on serve's
// /metrics and pagoda_gateway_tls_handshake_failures_total on the gateway's.
// Skips without openssl.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { Readable } from 'node:stream';
import tls from 'node:tls';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setup, Server, freePort, sleep, makeRunner } from './harness.mjs';

const OPENSSL = ['/usr/bin/openssl', '/bin/openssl', '/usr/local/bin/openssl'].find(existsSync);
if (!OPENSSL) {
  console.log('skipped: the openssl CLI is absent');
  process.exit(0);
}

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'pagoda-tls-'));
const MODEL = 'stories260K';
const MESSAGES = [{ role: 'user', content: 'Once upon a time' }];
let plainServe, tlsServe, gw;

const ssl = (...args) => execFileSync(OPENSSL, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();

function makeCa(name, subject) {
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`,
      '-out', `${name}.pem`, '-days', '1', '-subj', `/CN=${subject}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
}
// A server certificate for localhost and 127.0.0.1 signed by `ca`, with a
// given serial (hex): <name>.pem and <name>.key.
function makeLeaf(name, ca, serialHex) {
  writeFileSync(join(dir, `${name}.ext`),
                'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`,
      '-out', `${name}.csr`, '-subj', '/CN=localhost');
  ssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-set_serial', `0x${serialHex}`,
      '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
}
const file = (name) => join(dir, name);
const pem = (name) => readFileSync(file(name));

// fetch over node:https trusting exactly `ca` (what the openai client calls).
function httpsFetch(ca) {
  const agent = new https.Agent({ ca, keepAlive: true });
  return (url, init = {}) => new Promise((resolve, reject) => {
    const headers = {};
    new Headers(init.headers ?? {}).forEach((v, k) => { headers[k] = v; });
    const req = https.request(new URL(url), { method: init.method ?? 'GET', headers, agent }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        for (const x of [].concat(v ?? [])) h.append(k, x);
      }
      resolve(new Response(Readable.toWeb(res), { status: res.statusCode, headers: h }));
    });
    req.on('error', reject);
    init.signal?.addEventListener('abort', () => req.destroy(new Error('aborted')));
    req.end(init.body ?? undefined);
  });
}
const client = (base, ca = pem('ca.pem')) =>
  new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000, fetch: httpsFetch(ca) });

// The serial (upper-case hex) of the certificate a fresh connection gets.
function servedSerial(port) {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: pem('ca.pem') }, () => {
      const serial = s.getPeerCertificate().serialNumber;
      s.end();
      resolve(serial.toUpperCase().replace(/^0+/, ''));
    });
    s.on('error', reject);
  });
}

async function waitHttps(base, proc) {
  const f = httpsFetch(pem('ca.pem'));
  for (let i = 0; i < 300; ++i) {
    if (proc.exited) throw new Error(`${base}: the process exited early`);
    try { if ((await f(`${base}/health`)).status === 200) return; } catch {}
    await sleep(100);
  }
  throw new Error(`${base}: no /health 200 within 30 s`);
}

function launch(args) {
  const p = { stderr: '', exited: false };
  p.proc = spawn(bin, args, { stdio: ['ignore', 'inherit', 'pipe'] });
  p.proc.stderr.on('data', (d) => { p.stderr += d; process.stderr.write(d); });
  p.proc.on('exit', (code, signal) => { p.exited = true; p.exitCode = code ?? signal; });
  p.stop = async () => {
    if (p.exited) return p.exitCode;
    p.proc.kill('SIGTERM');
    await new Promise(r => { if (p.exited) r(); else p.proc.on('exit', r); setTimeout(r, 10000); });
    if (!p.exited) p.proc.kill('SIGKILL');
    return p.exitCode;
  };
  return p;
}

async function waitStderr(p, re, from) {
  for (let i = 0; i < 100; ++i) {
    if (re.test(p.stderr.slice(from))) return;
    await sleep(50);
  }
  throw new Error(`no ${re} in the log`);
}

async function before() {
  makeCa('ca', 'pagoda e2e throwaway CA');
  makeCa('other-ca', 'some other CA');
  makeLeaf('serve', 'ca', '1001');
  makeLeaf('gateway', 'ca', '2002');
  plainServe = await Server.start(bin, modelPath, OpenAI);

  const port = await freePort();
  tlsServe = launch(['serve', '-m', modelPath, '--port', String(port), '-t', '1', '--tls-cert', file('serve.pem'),
                     '--tls-key', file('serve.key')]);
  tlsServe.port = port;
  tlsServe.base = `https://localhost:${port}`;
  await waitHttps(tlsServe.base, tlsServe);

  const model = (name, url, caFile) =>
    `[[models]]\nname = "${name}"\nserved_model_name = "${MODEL}"\npolicy = "least_loaded"\n` +
    `[[models.deployments]]\nversion = "v1"\n[[models.deployments.replicas]]\nurl = "${url}"\n` +
    (caFile ? `ca_file = "${caFile}"\n` : '') + '\n';
  writeFileSync(file('gateway.toml'),
                `[gateway]\nhealth_interval_ms = 200\ntls_cert = "${file('gateway.pem')}"\n` +
                `tls_key = "${file('gateway.key')}"\n\n` +
                model('plain-replica', plainServe.base) +
                model('tls-replica', `https://localhost:${port}`, file('ca.pem')));
  const gport = await freePort();
  gw = launch(['gateway', '--config', file('gateway.toml'), '--listen', `127.0.0.1:${gport}`]);
  gw.port = gport;
  gw.base = `https://localhost:${gport}`;
  await waitHttps(gw.base, gw);
}

async function chatOnce(c, model) {
  const r = await c.chat.completions.create({ model, messages: MESSAGES, max_tokens: 8 });
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.choices[0].message.content.length > 0);
  return r;
}

async function streamOnce(c, model) {
  const stream = await c.chat.completions.create({ model, messages: MESSAGES, max_tokens: 16, stream: true });
  let chunks = 0, text = '', finish = null;
  for await (const ch of stream) {
    ++chunks;
    text += ch.choices[0]?.delta?.content ?? '';
    finish = ch.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(chunks >= 2, `only ${chunks} chunks`);
  assert.ok(text.length > 0);
  assert.ok(finish === 'stop' || finish === 'length', `finish_reason ${finish}`);
}

// Plain HTTP to a TLS port: a 400 error object (not a hang, not a crash),
// through fetch and through the openai client; then https still works.
async function assertPlainHttpRefused(port, base) {
  const r = await fetch(`http://127.0.0.1:${port}/v1/models`);
  assert.equal(r.status, 400);
  const body = await r.json();
  assert.equal(body.error.code, 'plain_http_to_https_port');
  const plain = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10000 });
  await assert.rejects(plain.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 4 }),
                       (e) => e.status === 400);
  assert.equal((await httpsFetch(pem('ca.pem'))(`${base}/health`)).status, 200);
}

// A counter from /metrics (fetched over https; plain `fetch` for http).
async function metricValue(base, name) {
  const get = base.startsWith('https:') ? httpsFetch(pem('ca.pem')) : fetch;
  const text = await (await get(`${base}/metrics`)).text();
  const m = text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)$`, 'm'));
  assert.ok(m, `${name} is not on ${base}/metrics`);
  return Number(m[1]);
}

// Waits for the counter to reach `atLeast` (the server sees a client's
// refusal a moment after the client gave up).
async function awaitMetric(base, name, atLeast) {
  let v = 0;
  for (let i = 0; i < 40; ++i) {
    v = await metricValue(base, name);
    if (v >= atLeast) return v;
    await sleep(50);
  }
  assert.fail(`${name} stayed at ${v}, expected at least ${atLeast}`);
}

const SERVE_TLS_FAILURES = 'pagoda:tls_handshake_failures_total';
const GATEWAY_TLS_FAILURES = 'pagoda_gateway_tls_handshake_failures_total';

async function assertUntrusted(base) {
  // Another CA's bundle, and the system store alone (the stock fetch).
  for (const c of [client(base, pem('other-ca.pem')),
                   new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 10000 })]) {
    await assert.rejects(c.chat.completions.create({ model: MODEL, messages: MESSAGES, max_tokens: 4 }), (e) => {
      const cause = `${e.cause?.code ?? ''} ${e.cause?.cause?.code ?? ''} ${e.cause?.message ?? ''}`;
      assert.equal(e.constructor.name, 'APIConnectionError', String(e));
      assert.match(cause, /UNABLE_TO_VERIFY|self.signed|certificate/i, cause);
      return true;
    });
  }
}

test('serve over https: a chat completion through the openai client', async () => {
  await chatOnce(client(tlsServe.base), MODEL);
});

test('serve over https: a streamed chat completion arrives chunk by chunk', async () => {
  await streamOnce(client(tlsServe.base), MODEL);
});

test('the stock openai client trusts the CA through NODE_EXTRA_CA_CERTS', async () => {
  const script = `import OpenAI from 'openai';
const c = new OpenAI({ baseURL: '${tlsServe.base}/v1', apiKey: 'unused', maxRetries: 0 });
const r = await c.chat.completions.create({ model: '${MODEL}', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
let n = 0;
for await (const ch of await c.chat.completions.create({ model: '${MODEL}', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, stream: true })) ++n;
console.log(JSON.stringify({ object: r.object, chunks: n }));`;
  const out = await new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--input-type=module', '-e', script],
                    { cwd: here, env: { ...process.env, NODE_EXTRA_CA_CERTS: file('ca.pem') }, stdio: ['ignore', 'pipe', 'inherit'] });
    let s = '';
    p.stdout.on('data', (d) => { s += d; });
    p.on('exit', (code) => (code === 0 ? resolve(s) : reject(new Error(`child exited ${code}`))));
  });
  const r = JSON.parse(out.trim());
  assert.equal(r.object, 'chat.completion');
  assert.ok(r.chunks >= 2);
});

test('plain HTTP to the TLS port of serve gets a 400 and serve keeps serving', async () => {
  const before = await metricValue(tlsServe.base, SERVE_TLS_FAILURES);
  await assertPlainHttpRefused(tlsServe.port, tlsServe.base);
  await chatOnce(client(tlsServe.base), MODEL);
  // fetch and the openai client: two failed handshakes; the https calls none.
  assert.equal(await metricValue(tlsServe.base, SERVE_TLS_FAILURES), before + 2);
  assert.equal(await metricValue(plainServe.base, SERVE_TLS_FAILURES), 0);  // plain HTTP: always 0
});

test('a client trusting another CA (or only the system store) fails verification on serve', async () => {
  const before = await metricValue(tlsServe.base, SERVE_TLS_FAILURES);
  await assertUntrusted(tlsServe.base);
  await chatOnce(client(tlsServe.base), MODEL);
  // Each client refused the certificate during the handshake.
  await awaitMetric(tlsServe.base, SERVE_TLS_FAILURES, before + 2);
});

test('gateway over https to a plain HTTP replica: chat and stream', async () => {
  const c = client(gw.base);
  const r = await chatOnce(c, 'plain-replica');
  assert.equal(r.model, MODEL);
  await streamOnce(c, 'plain-replica');
});

test('gateway to a pagoda serve --tls-cert replica over https with ca_file: chat and stream', async () => {
  const c = client(gw.base);
  await chatOnce(c, 'tls-replica');
  await streamOnce(c, 'tls-replica');
});

test('plain HTTP to the gateway TLS port gets a 400; an untrusted client fails; the gateway stays healthy', async () => {
  const before = await metricValue(gw.base, GATEWAY_TLS_FAILURES);
  await assertPlainHttpRefused(gw.port, gw.base);
  assert.equal(await metricValue(gw.base, GATEWAY_TLS_FAILURES), before + 2);
  await assertUntrusted(gw.base);
  await awaitMetric(gw.base, GATEWAY_TLS_FAILURES, before + 4);
  await chatOnce(client(gw.base), 'plain-replica');
  assert.equal(gw.exited, false);
});

test('serve: SIGHUP reloads the certificate; a broken one is refused and the old one stays', async () => {
  assert.equal(await servedSerial(tlsServe.port), '1001');
  const keep = pem('serve.pem');
  writeFileSync(file('serve.pem'), 'not a certificate\n');
  let from = tlsServe.stderr.length;
  tlsServe.proc.kill('SIGHUP');
  await waitStderr(tlsServe, /TLS reload refused/, from);
  assert.equal(await servedSerial(tlsServe.port), '1001');
  writeFileSync(file('serve.pem'), keep);
  makeLeaf('serve', 'ca', '3003');  // renewed in place
  from = tlsServe.stderr.length;
  tlsServe.proc.kill('SIGHUP');
  await waitStderr(tlsServe, /TLS certificate reloaded/, from);
  assert.equal(await servedSerial(tlsServe.port), '3003');
  await chatOnce(client(tlsServe.base), MODEL);
  assert.equal(tlsServe.exited, false);
});

test('gateway: SIGHUP reloads the config and its certificate', async () => {
  assert.equal(await servedSerial(gw.port), '2002');
  copyFileSync(file('gateway.pem'), file('gateway.old.pem'));
  writeFileSync(file('gateway.pem'), 'not a certificate\n');
  let from = gw.stderr.length;
  gw.proc.kill('SIGHUP');
  await waitStderr(gw, /config reload refused/, from);
  assert.equal(await servedSerial(gw.port), '2002');
  makeLeaf('gateway', 'ca', '4004');
  from = gw.stderr.length;
  gw.proc.kill('SIGHUP');
  await waitStderr(gw, /config reloaded/, from);
  assert.equal(await servedSerial(gw.port), '4004');
  await chatOnce(client(gw.base), 'tls-replica');
});

test('everything stops cleanly', async () => {
  assert.equal(await gw.stop(), 0);
  assert.equal(await tlsServe.stop(), 0);
});

async function after() {
  if (gw) await gw.stop();
  if (tlsServe) await tlsServe.stop();
  if (plainServe) await plainServe.stop();
  rmSync(dir, { recursive: true, force: true });
}

await run({ before, after });
