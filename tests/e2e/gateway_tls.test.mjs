// pagoda gateway -> https upstream, with a real TLS server: nginx on loopback
// terminating TLS with a throwaway CA and server certificates made here with
// the openssl CLI, proxying to a real `pagoda serve`. nginx answers 401
// unless the Authorization header carries the key the gateway read from its
// environment, so a 200 proves the key went upstream. Checks: with ca_file,
// chat (plain and streamed) succeeds and TLS connections are kept alive;
// without ca_file (system store) verification fails with a 502 error object
// naming the certificate problem; a certificate for another host name fails
// the same way; neither the key nor the prompt reaches the gateway's log.
// Skips without nginx or openssl.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setup, Server, freePort, sleep, makeRunner, assertErrorShape } from './harness.mjs';

function which(name) {
  for (const d of ['/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/sbin', '/usr/local/bin']) {
    if (existsSync(join(d, name))) return join(d, name);
  }
  return null;
}
const NGINX = which('nginx');
const OPENSSL = which('openssl');
if (!NGINX || !OPENSSL) {
  console.log(`skipped: ${NGINX ? 'openssl' : 'nginx'} is absent (scripts/setup --bench installs nginx-light)`);
  process.exit(0);
}

const { bin, modelPath, OpenAI } = await setup();
const { test, run } = makeRunner();
const dir = mkdtempSync(join(tmpdir(), 'pagoda-gw-tls-'));
const KEY = 'sk-e2e-tls-' + Math.random().toString(36).slice(2);
const PROMPT = 'Once upon a time PROMPT-MARKER-' + Math.random().toString(36).slice(2);
let serve, nginx, gw, gwBase, gwStderr = '';
let portGood, portWrong, portDead;

const ssl = (...args) => execFileSync(OPENSSL, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });

// A CA, and two leaf certificates it signs: one for localhost, one for another name.
function makeCerts() {
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1',
      '-subj', '/CN=pagoda e2e throwaway CA', '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  for (const [name, san] of [['good', 'DNS:localhost'], ['wrong', 'DNS:wrong.example']]) {
    writeFileSync(join(dir, `${name}.ext`),
                  `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`,
        '-subj', `/CN=${san.slice(4)}`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
        '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`);
  }
}

function nginxConf(servePort) {
  const server = (port, cert) => `
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${dir}/${cert}.pem;
    ssl_certificate_key ${dir}/${cert}.key;
    keepalive_timeout 60s;
    location / {
      if ($key_ok = 0) { return 401 '{"error":{"message":"wrong or missing key","type":"auth","param":null,"code":"401"}}'; }
      proxy_pass http://127.0.0.1:${servePort};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }`;
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx_error.log warn;
events { worker_connections 128; }
http {
  client_body_temp_path ${dir}/t_body;
  proxy_temp_path ${dir}/t_proxy;
  fastcgi_temp_path ${dir}/t_fastcgi;
  uwsgi_temp_path ${dir}/t_uwsgi;
  scgi_temp_path ${dir}/t_scgi;
  map $http_authorization $key_ok { "Bearer ${KEY}" 1; default 0; }
  log_format tls '$connection $connection_requests $status $key_ok $ssl_server_name';
  access_log ${dir}/access.log tls;
  ${server(portGood, 'good')}
  ${server(portWrong, 'wrong')}
}
`;
}

async function waitPort(port) {
  for (let i = 0; i < 100; ++i) {
    const ok = await new Promise((res) => {
      const s = connect(port, '127.0.0.1', () => { s.destroy(); res(true); });
      s.on('error', () => res(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on ${port}`);
}

function gatewayConfig() {
  const ca = join(dir, 'ca.pem');
  const up = (name, port, caFile) =>
    `[[upstreams]]\nname = "${name}"\nurl = "https://localhost:${port}/v1"\napi_key_env = "PAGODA_TLS_KEY"\n` +
    `model = "stories260K"\n${caFile ? `ca_file = "${caFile}"\n` : ''}\n`;
  // The own replica is a port nobody listens on: the aliases' fallbacks serve.
  let s = `[gateway]\nhealth_interval_ms = 100\nhealth_timeout_ms = 300\neject_after_failures = 1\n` +
          `first_byte_timeout_ms = 30000\n\n[[models]]\nname = "own"\npolicy = "least_loaded"\n` +
          `[[models.deployments]]\nversion = "v1"\n[[models.deployments.replicas]]\n` +
          `url = "http://127.0.0.1:${portDead}"\nname = "dead"\n\n`;
  s += up('secure', portGood, ca) + up('system-store', portGood, '') + up('wrong-host', portWrong, ca);
  for (const [alias, fallback] of [['ext', 'secure'], ['ext-system', 'system-store'], ['ext-wrong', 'wrong-host']]) {
    s += `[[aliases]]\nname = "${alias}"\nmodel = "own"\nfallback = "${fallback}"\n\n`;
  }
  return s;
}

async function before() {
  makeCerts();
  serve = await Server.start(bin, modelPath, OpenAI);
  [portGood, portWrong, portDead] = [await freePort(), await freePort(), await freePort()];
  writeFileSync(join(dir, 'nginx.conf'), nginxConf(serve.port));
  nginx = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'nginx_error.log'),
                        '-g', 'daemon off;'], { stdio: ['ignore', 'inherit', 'inherit'] });
  nginx.exited = false;
  nginx.on('exit', () => { nginx.exited = true; });
  await waitPort(portGood);
  await waitPort(portWrong);

  writeFileSync(join(dir, 'gateway.toml'), gatewayConfig());
  const port = await freePort();
  gwBase = `http://127.0.0.1:${port}`;
  gw = spawn(bin, ['gateway', '--config', join(dir, 'gateway.toml'), '--listen', `127.0.0.1:${port}`],
             { stdio: ['ignore', 'inherit', 'pipe'], env: { ...process.env, PAGODA_TLS_KEY: KEY } });
  gw.stderr.on('data', (d) => { gwStderr += d; process.stderr.write(d); });
  gw.exited = false;
  gw.on('exit', () => { gw.exited = true; });
  await waitPort(port);
  // The dead replica's first probes eject it; from then on the aliases fall back.
  await sleep(800);
}

async function chat(model, extra = {}) {
  return fetch(`${gwBase}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: PROMPT }], max_tokens: 8, ...extra }),
  });
}

test('with ca_file: chat reaches the https upstream with the env key', async () => {
  for (let i = 0; i < 3; ++i) {
    const r = await chat('ext');
    const body = await r.json();
    assert.equal(r.status, 200, JSON.stringify(body));
    assert.equal(r.headers.get('x-pagoda-deployment'), 'upstream:secure');
    assert.equal(body.object, 'chat.completion');
    assert.ok(body.choices[0].message.content.length > 0);
  }
});

test('with ca_file: a stream arrives chunk by chunk through TLS', async () => {
  const client = new OpenAI({ baseURL: `${gwBase}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  const stream = await client.chat.completions.create({
    model: 'ext', stream: true, max_tokens: 16, messages: [{ role: 'user', content: PROMPT }],
  });
  let chunks = 0, text = '', finish = null;
  for await (const c of stream) {
    ++chunks;
    text += c.choices[0]?.delta?.content ?? '';
    finish = c.choices[0]?.finish_reason ?? finish;
  }
  assert.ok(chunks >= 2, `only ${chunks} chunks`);
  assert.ok(text.length > 0);
  assert.ok(finish === 'stop' || finish === 'length', `finish_reason ${finish}`);
});

test('nginx saw the key on every call, and TLS connections were reused', async () => {
  await sleep(200);  // nginx writes its log line after the response
  const lines = readFileSync(join(dir, 'access.log'), 'utf8').trim().split('\n').map(l => l.split(' '));
  const good = lines.filter(l => l[4] === 'localhost');
  assert.ok(good.length >= 4, `access log: ${good.length} lines for localhost`);
  for (const l of good) {
    assert.equal(l[3], '1', `a request without the key: ${l.join(' ')}`);
    assert.equal(l[2], '200', l.join(' '));
  }
  assert.ok(good.some(l => Number(l[1]) > 1), `no request reused a TLS connection: ${JSON.stringify(good)}`);
});

async function assertTlsFailure(model, problem) {
  const r = await chat(model);
  const body = await r.json();
  assert.equal(r.status, 502, JSON.stringify(body));
  assertErrorShape(assert, body, model);
  assert.equal(body.error.code, 'bad_gateway');
  assert.match(body.error.message, /TLS/);
  assert.match(body.error.message, problem);
  assert.ok(!body.error.message.includes(KEY));
}

test('without ca_file (system store) the throwaway CA is not trusted: 502', async () => {
  await assertTlsFailure('ext-system', /certificate/);
});

test('a certificate for another host name fails verification: 502', async () => {
  await assertTlsFailure('ext-wrong', /hostname mismatch/);
});

test('the gateway log names TLS problems but never the key or the prompt', async () => {
  assert.match(gwStderr, /TLS/);
  assert.ok(!gwStderr.includes(KEY), 'the key reached the log');
  assert.ok(!gwStderr.includes('PROMPT-MARKER'), 'the prompt reached the log');
  assert.equal(gw.exited, false);
});

async function after() {
  if (gw && !gw.exited) {
    gw.kill('SIGTERM');
    await new Promise(r => { if (gw.exited) r(); else gw.on('exit', r); setTimeout(r, 5000); });
  }
  if (nginx && !nginx.exited) {
    nginx.kill('SIGTERM');
    await new Promise(r => { if (nginx.exited) r(); else nginx.on('exit', r); setTimeout(r, 5000); });
    if (!nginx.exited) nginx.kill('SIGKILL');
  }
  if (serve) await serve.stop();
  rmSync(dir, { recursive: true, force: true });
}

await run({ before, after });
