// The web console in a real browser: playwright-core driving Debian's
// chromium (headless; no browser download) against real `pagoda serve`
// processes on loopback with the stories260K model. Run as
//   node console.test.mjs <pagoda binary> <model.gguf> [artifacts dir]
// and prints "skipped: ..." (exit 0) without node_modules, chromium or the model.
//
//  - Playground: an answer streams and shows its usage (prompt, cached,
//    completion tokens, TTFT, tokens/s); the second turn shows cached tokens;
//    the request is shown as curl and as openai SDK code; a JSON-schema
//    request renders an object that matches the schema; a forced tool call,
//    its result sent back as a tool message and the answer to it; a prompt
//    holding <script> and an onerror <img> appears as text and runs nothing.
//  - Dashboard: the charts gain points each second and the prefix-cache hit
//    rate rises while requests with a repeated prefix run; on a gateway with
//    two replicas, each replica's series (filter and one line per replica).
//  - Admin (pagoda serve --db --data-dir): locked without the admin key; a
//    tenant and a key made in the page work on the API, the revoked key gets
//    401, a rotated key's new secret works and its old one gets 401, a
//    tenant edited in the page changes on the API; the dashboard's JSON needs
//    a key (in scope); the usage CSV downloads; a batch shows its progress
//    and its output file.
//  - A server killed mid-stream: the answer shows an error, the page stays usable.
//  - Every page at 1280 and 390 px wide (no horizontal overflow), every
//    control reached by Tab, no request leaves the page's origin;
//    screenshots of each page go to the artifacts dir.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { Server, freePort, makeRunner, sleep, startGateway } from '../e2e/harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const [bin, modelPath, artifactsArg] = process.argv.slice(2);
const CHROMIUM = process.env.PAGODA_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(join(here, 'node_modules', 'playwright-core'))) {
  console.log('skipped: tests/web/node_modules is absent (run npm ci in tests/web)');
  process.exit(0);
}
if (!existsSync(CHROMIUM)) {
  console.log(`skipped: ${CHROMIUM} is absent (apt-get install chromium; scripts/setup --tests)`);
  process.exit(0);
}
if (!modelPath || !existsSync(modelPath)) {
  console.log(`skipped: test model ${modelPath} is absent`);
  process.exit(0);
}
if (!bin || !existsSync(bin)) throw new Error(`pagoda binary ${bin} is absent`);
const { chromium } = await import('playwright-core');

const artifacts = artifactsArg ?? mkdtempSync(join(tmpdir(), 'pagoda-web-'));
mkdirSync(artifacts, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), 'pagoda-web-db-'));
const ADMIN = 'web-console-admin-key-0123456789';
process.env.PAGODA_WEB_ADMIN = ADMIN;
// Server.start hands its client class an URL and key; the console tests talk through the browser and fetch.
class NoClient { constructor() {} }

const { test, run } = makeRunner();
let browser, plain, keyed;
const offOrigin = [];  // requests a page made to another origin

// A page on `base` at `width`, with every request checked against its origin.
async function openPage(base, width = 1280) {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const origin = new URL(base).origin;
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) return route.continue();
    offOrigin.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.errors = errors;
  return page;
}

// The playground on `base`, once its model list has loaded.
async function openPlayground(base, width = 1280) {
  const page = await openPage(base, width);
  await page.goto(`${base}/#/playground`);
  await page.waitForSelector('#pg-model option', { state: 'attached' });
  return page;
}

async function closePage(page) { await page.context().close(); }

async function shot(page, name) {
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}

// Sends `text` in the playground and waits for the answer's stats (or its error).
async function sendAndWait(page, text, timeout = 30000) {
  const before = await page.locator('[data-testid=answer-stats]').count();
  await page.fill('#pg-prompt', text);
  await page.click('#pg-send');
  const answer = page.locator('article.msg.assistant').nth(before);
  await page.waitForFunction((i) => {
    const a = document.querySelectorAll('article.msg.assistant')[i];
    return a && !a.hasAttribute('aria-busy');
  }, before, { timeout });
  return answer;
}

// Tab from the top of the page until focus comes back around: every visible,
// enabled control must have had focus on the way.
async function assertTabReachesEverything(page, what) {
  const total = await page.evaluate(() => {
    const sel = 'a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])';
    let n = 0;
    for (const el of document.querySelectorAll(sel)) {
      el.removeAttribute('data-kb');
      if (el.disabled || !el.checkVisibility() || el.closest('[hidden]')) continue;
      el.setAttribute('data-kb', String(n++));
    }
    document.activeElement?.blur();
    return n;
  });
  const seen = new Set();
  for (let i = 0; i < total + 15 && seen.size < total; ++i) {
    await page.keyboard.press('Tab');
    const k = await page.evaluate(() => document.activeElement?.getAttribute('data-kb'));
    if (k !== null && k !== undefined) seen.add(k);
  }
  const missed = await page.evaluate((seenList) => [...document.querySelectorAll('[data-kb]')]
    .filter(el => !seenList.includes(el.getAttribute('data-kb')))
    .map(el => `${el.tagName.toLowerCase()}#${el.id || el.getAttribute('aria-label') || el.textContent.trim().slice(0, 20)}`),
  [...seen]);
  assert.deepEqual(missed, [], `${what}: controls Tab never reached`);
  assert.ok(total > 3, `${what}: only ${total} controls`);
}

async function assertFits(page, what) {
  const { scroll, inner } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
  assert.ok(scroll <= inner + 1, `${what}: ${scroll} px wide in a ${inner} px viewport`);
}

// A relay in front of a server whose server-to-browser bytes can be slowed
// to a trickle, so that the server can be killed while a stream is still
// arriving; when the server's side closes, the browser's connection is cut
// (what a dead server looks like from the browser).
async function startRelay(targetPort) {
  const port = await freePort();
  const relay = { port, throttle: false, sockets: new Set() };
  relay.server = createServer((client) => {
    const up = connect(targetPort, '127.0.0.1');
    const queue = [];
    let timer = null;
    const pump = () => {
      if (!queue.length) { clearInterval(timer); timer = null; return; }
      const head = queue[0];
      client.write(head.subarray(0, 24));
      if (head.length > 24) queue[0] = head.subarray(24); else queue.shift();
    };
    up.on('data', (d) => {
      if (!relay.throttle && !queue.length) { client.write(d); return; }
      queue.push(d);
      timer ??= setInterval(pump, 20);
    });
    client.on('data', (d) => up.write(d));
    const end = () => { clearInterval(timer); client.destroy(); up.destroy(); };
    up.on('close', end);
    up.on('error', end);
    client.on('close', end);
    client.on('error', end);
  });
  await new Promise((r) => relay.server.listen(port, '127.0.0.1', r));
  relay.base = `http://127.0.0.1:${port}`;
  return relay;
}

const SYSTEM = 'You are a storyteller. ' + 'Tell a short and happy story about a little dog and a cat who play in the garden. '.repeat(6);

// --- console basics ------------------------------------------------------------
test('the console is served with its headers; /v1 paths keep the JSON 404', async () => {
  const r = await fetch(`${plain.base}/`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/html/);
  assert.equal(r.headers.get('cache-control'), 'no-cache');
  const csp = r.headers.get('content-security-policy');
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|https?:/);
  const etag = r.headers.get('etag');
  const html = await r.text();
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  const again = await fetch(`${plain.base}/`, { headers: { 'if-none-match': etag } });
  assert.equal(again.status, 304);
  const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)[1];
  const a = await fetch(`${plain.base}${asset}`);
  assert.equal(a.status, 200);
  assert.match(a.headers.get('content-type'), /^text\/javascript/);
  assert.match(a.headers.get('cache-control'), /immutable/);
  const missing = await fetch(`${plain.base}/v1/nothing-here`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, 'not_found');
});

test('playground streams an answer and shows its usage, cached tokens and code', async () => {
  const page = await openPlayground(plain.base);
  await page.fill('#pg-system', SYSTEM);
  await page.fill('#pg-temperature', '0');
  await page.fill('#pg-max-tokens', '48');
  // The first answer: streamed deltas and usage from the last chunk.
  const answer = await sendAndWait(page, 'Once upon a time');
  const text = await answer.locator('[data-testid=answer]').textContent();
  assert.ok(text.length > 0, 'an answer');
  const stats = answer.locator('[data-testid=answer-stats]');
  const prompt = Number(await stats.getAttribute('data-prompt-tokens'));
  const completion = Number(await stats.getAttribute('data-completion-tokens'));
  assert.ok(prompt > 100, `prompt tokens ${prompt}`);
  assert.ok(completion > 0 && completion <= 48, `completion tokens ${completion}`);
  const line = await stats.textContent();
  assert.match(line, /TTFT \d+ ms/);
  assert.match(line, /tok\/s/);
  // The second turn repeats the conversation so far: its prefix is cached.
  const second = await sendAndWait(page, 'And then?');
  const cached = Number(await second.locator('[data-testid=answer-stats]').getAttribute('data-cached-tokens'));
  assert.ok(cached >= 64, `cached tokens on the second turn: ${cached}`);
  assert.match(await second.locator('[data-testid=answer-stats]').textContent(), new RegExp(`cached ${cached}`));
  // The request as code.
  const curl = await page.textContent('#pg-code');
  assert.match(curl, /^curl http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions/);
  assert.match(curl, /"stream": true/);
  assert.doesNotMatch(curl, /Bearer [^$]/, 'no key written into the snippet');
  await page.selectOption('#pg-code-kind', 'python');
  assert.match(await page.textContent('#pg-code'), /client\.chat\.completions\.create\(/);
  await page.selectOption('#pg-code-kind', 'js');
  assert.match(await page.textContent('#pg-code'), /new OpenAI\(/);
  await shot(page, 'playground-usage');
  assert.deepEqual(page.errors, []);
  await closePage(page);
});

test('a JSON-schema request renders a valid object; a forced tool call shows as one', async () => {
  const page = await openPlayground(plain.base);
  await page.selectOption('#pg-format', 'json_schema');
  await page.fill('#pg-max-tokens', '128');
  await page.fill('#pg-temperature', '0');
  const answer = await sendAndWait(page, 'Describe a person as JSON.');
  const result = answer.locator('[data-testid=json-result]');
  assert.equal(await result.getAttribute('data-valid'), 'true', await result.textContent());
  const obj = JSON.parse(await result.locator('[data-testid=json-value]').textContent());
  assert.equal(typeof obj.name, 'string');
  assert.ok(Number.isInteger(obj.age) && obj.age >= 0 && obj.age <= 150, `age ${obj.age}`);
  assert.deepEqual(Object.keys(obj).sort(), ['age', 'name']);
  await shot(page, 'playground-json-schema');
  // Tools (a new chat: the model's context is 512 tokens): a forced call
  // arrives as a tool call, not as text.
  await page.click('#pg-clear');
  await page.fill('#pg-max-tokens', '160');
  await page.fill('#pg-temperature', '0');
  await page.selectOption('#pg-format', 'text');
  await page.check('#pg-use-tools');
  await page.selectOption('#pg-tool-choice', 'required');
  const call = await sendAndWait(page, 'What is the weather in Paris?');
  const calls = await call.locator('[data-testid=tool-calls]').textContent();
  const m = /^get_weather\((.*)\)$/s.exec(calls);
  assert.ok(m, `tool calls: ${calls}; the answer: ${await call.textContent()}`);
  assert.equal(typeof JSON.parse(m[1]).city, 'string');
  await shot(page, 'playground-tool-call');
  // The result of the call goes back as a role "tool" message after the
  // assistant message that carried the call, and the model answers it.
  const resultField = call.locator('#pg-tool-result-0');
  const callId = await resultField.getAttribute('data-tool-call-id');
  assert.match(callId ?? '', /^call_/);
  assert.match(await call.locator('.tool-results').textContent(), new RegExp(`Result of get_weather \\(${callId}\\)`));
  await assertTabReachesEverything(page, 'playground with a tool-result form');
  await page.setViewportSize({ width: 390, height: 900 });
  await assertFits(page, 'playground with a tool-result form at 390');
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.click('#pg-tool-send');  // empty: refused with a message, nothing sent
  assert.match(await page.textContent('.page-status .notice.error'), /enter a result for get_weather/);
  assert.equal(await page.locator('article.msg.assistant').count(), 1);
  const sent = [];
  page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) sent.push(JSON.parse(r.postData())); });
  await page.selectOption('#pg-tool-choice', 'none');
  await page.fill('#pg-max-tokens', '24');
  const toolResult = '{"city": "Paris", "temperature": 21, "sky": "<b>clear</b>"}';
  await resultField.fill(toolResult);
  await page.click('#pg-tool-send');
  await page.waitForFunction(() => {
    const a = document.querySelectorAll('article.msg.assistant')[1];
    return a && !a.hasAttribute('aria-busy');
  }, null, { timeout: 30000 });
  const reply = page.locator('article.msg.assistant').nth(1);
  assert.equal(await reply.locator('.notice.error').count(), 0, await reply.textContent());
  assert.ok((await reply.locator('[data-testid=answer]').textContent()).length > 0, 'an answer to the tool result');
  assert.ok(Number(await reply.locator('[data-testid=answer-stats]').getAttribute('data-completion-tokens')) > 0);
  assert.equal(await page.locator('[data-testid=tool-message]').textContent(), toolResult);
  assert.equal(await page.locator('.tool-results').count(), 0, 'the answered form is gone');
  assert.equal(sent.length, 1);
  const msgs = sent[0].messages;
  assert.equal(sent[0].stream, true);
  assert.equal(sent[0].tool_choice, 'none');
  assert.deepEqual(msgs.map(x => x.role), ['user', 'assistant', 'tool']);
  assert.equal(msgs[1].tool_calls.length, 1);
  assert.equal(msgs[1].tool_calls[0].id, callId);
  assert.equal(msgs[1].tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(msgs[2], { role: 'tool', tool_call_id: callId, content: toolResult });
  assert.match(await page.textContent('#pg-code'), new RegExp(`"tool_call_id": "${callId}"`));
  await shot(page, 'playground-tool-result');
  assert.deepEqual(page.errors, []);
  await closePage(page);
});

test('a prompt holding <script> appears as text and runs nothing', async () => {
  const page = await openPlayground(plain.base);
  await page.fill('#pg-max-tokens', '8');
  const evil = '<script>window.__pwned = 1</script><img src="/x" onerror="window.__pwned = 2"><b>bold</b>';
  await sendAndWait(page, evil);
  const shown = await page.locator('[data-testid=user-message]').last().textContent();
  assert.equal(shown, evil);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('[data-testid=log] script, [data-testid=log] img, [data-testid=log] b').count(), 0);
  await closePage(page);
});

test('dashboard charts update under load and the prefix-cache hit rate rises', async () => {
  const page = await openPage(plain.base);
  await page.goto(`${plain.base}/#/dashboard`);
  await page.waitForSelector('[data-testid=chart-requests][data-points="2"]', { timeout: 10000 });
  const before = Number(await page.getAttribute('[data-testid=tile-hit-rate-lifetime]', 'data-value') || 0);
  const pointsBefore = Number(await page.getAttribute('[data-testid=chart-throughput]', 'data-points'));
  // Load: 24 requests sharing a long system prompt, 3 at a time, for ~5 s.
  const prefix = 'The quick brown fox jumps over the lazy dog in the sunny garden. '.repeat(5);
  const model = (await (await fetch(`${plain.base}/v1/models`)).json()).data[0].id;
  const one = async (i) => {
    const r = await fetch(`${plain.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 24, temperature: 0,
        messages: [{ role: 'system', content: prefix }, { role: 'user', content: `Story number ${i}` }] }) });
    const body = await r.text();
    assert.equal(r.status, 200, body);
  };
  let windowRate = 0;
  const watch = (async () => {
    for (let i = 0; i < 80; ++i) {
      windowRate = Math.max(windowRate, Number(await page.getAttribute('[data-testid=tile-hit-rate]', 'data-value') || 0));
      await sleep(100);
    }
  })();
  for (let i = 0; i < 24; i += 3) await Promise.all([one(i), one(i + 1), one(i + 2)]);
  await sleep(2200);  // two more polls
  const after = Number(await page.getAttribute('[data-testid=tile-hit-rate-lifetime]', 'data-value'));
  const pointsAfter = Number(await page.getAttribute('[data-testid=chart-throughput]', 'data-points'));
  assert.ok(pointsAfter >= pointsBefore + 2, `chart points ${pointsBefore} -> ${pointsAfter}`);
  assert.ok(after > before && after > 50, `lifetime hit rate ${before} -> ${after}`);
  await watch;
  assert.ok(windowRate > 50, `the hit rate over the last seconds peaked at ${windowRate}`);
  const tps = await page.evaluate(() => [...document.querySelectorAll('[data-testid=chart-throughput]')].map(e => e.dataset.points));
  assert.ok(Number(tps[0]) > 3);
  // The vLLM-board series behind it, on /metrics.
  const metrics = await (await fetch(`${plain.base}/metrics`)).text();
  for (const name of ['request_prompt_tokens', 'request_generation_tokens', 'request_prefill_time_seconds',
                      'request_decode_time_seconds', 'request_max_num_generation_tokens']) {
    const m = new RegExp(`^pagoda:${name}_count\\{model_name="${model}"\\} (\\d+)$`, 'm').exec(metrics);
    assert.ok(m && Number(m[1]) >= 24, `${name}_count: ${m?.[1]}`);
  }
  await shot(page, 'dashboard-under-load');
  assert.deepEqual(page.errors, []);
  await closePage(page);
});

test('the gateway dashboard shows each replica, its routing and its engine, per replica over time', async () => {
  // Two models on two servers: r0 (stories, the shared server) and r1 (tales, its own).
  const other = await Server.start(bin, modelPath, NoClient, ['-c', '512']);
  const config = join(dir, 'gateway.toml');
  const model = (name, replica, base) => `[[models]]\nname = "${name}"\nserved_model_name = "stories260K"\n` +
    `policy = "round_robin"\n[[models.deployments]]\nversion = "v1"\n[[models.deployments.replicas]]\n` +
    `name = "${replica}"\nurl = "${base}"\n\n`;
  writeFileSync(config, `[gateway]\nhealth_interval_ms = 200\n\n${model('stories', 'r0', plain.base)}${model('tales', 'r1', other.base)}`);
  const gw = await startGateway(bin, config);
  const chat = async (name, i) => {
    const r = await fetch(`${gw.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: name, max_tokens: 16, messages: [{ role: 'user', content: `Once upon a time ${i}` }] }) });
    assert.equal(r.status, 200, await r.text());
  };
  try {
    for (let i = 0; i < 3; ++i) await chat('stories', i);
    const page = await openPage(gw.base);
    await page.goto(`${gw.base}/#/dashboard`);
    const row = page.locator('[data-testid=replicas] tbody tr');
    await row.first().waitFor();
    assert.equal(await row.count(), 2);
    const cells = await row.first().locator('td').allTextContents();
    assert.equal(cells[0], 'r0');
    assert.equal(cells[3], 'healthy');
    assert.equal(cells[4], 'closed');
    assert.match(cells[6], /2xx 3/);
    assert.match(cells[9], /^\d+ \/ \d+$/, `the replica's own running / waiting: ${cells[9]}`);
    await page.waitForSelector('[data-testid=chart-requests][data-points="2"]', { timeout: 10000 });
    assert.ok(Number(await page.getAttribute('[data-testid=tile-kv]', 'data-value')) >= 0);
    // Load through the tales model only: r1 generates, r0 does not.
    for (let i = 0; i < 6; i += 2) await Promise.all([chat('tales', i), chat('tales', i + 1)]);
    await sleep(2200);  // two more polls
    const chart = async () => page.evaluate(() => {
      const el = document.querySelector('[data-testid=chart-throughput]');
      return { points: Number(el.dataset.points), series: JSON.parse(el.dataset.series), max: JSON.parse(el.dataset.max) };
    });
    const all = await chart();
    assert.deepEqual(all.series, ['generation', 'prompt']);
    assert.ok(all.max[0] > 0, `generation over all replicas: ${all.max[0]}`);
    // One replica's series, from the points already polled (none lost).
    await page.selectOption('#dash-replica', 'r1');
    const r1 = await chart();
    assert.ok(r1.points >= all.points, `points ${all.points} -> ${r1.points}`);
    assert.ok(r1.max[0] > 0, `r1's generation: ${r1.max[0]}`);
    assert.deepEqual(await row.locator('td:first-child').allTextContents(), ['r1']);
    await page.selectOption('#dash-replica', 'r0');
    const r0 = await chart();
    assert.ok(r0.points >= r1.points, `points ${r1.points} -> ${r0.points}`);
    assert.equal(r0.max[0], 0, `r0's generation while only tales had load`);
    assert.equal(Number(await page.getAttribute('[data-testid=tile-throughput]', 'data-value')), 0);
    // One line per replica.
    await page.selectOption('#dash-replica', '');
    await page.check('#dash-split');
    const split = await chart();
    assert.deepEqual(split.series, ['r0 generation', 'r0 prompt', 'r1 generation', 'r1 prompt']);
    assert.equal(split.max[0], 0);
    assert.ok(split.max[2] > 0, `r1's line: ${split.max[2]}`);
    assert.equal(await page.locator('[data-testid=chart-throughput] .u-legend .u-series').count(), 5);
    // The model filter narrows the replica filter to that model's replicas.
    await page.selectOption('#dash-model', 'tales');
    assert.deepEqual(await page.locator('#dash-replica option').evaluateAll(os => os.map(o => o.value)), ['', 'r1']);
    assert.deepEqual((await chart()).series, ['r1 generation', 'r1 prompt']);
    await shot(page, 'dashboard-gateway');
    await page.setViewportSize({ width: 390, height: 900 });
    await sleep(300);
    await assertFits(page, 'gateway dashboard at 390');
    await assertTabReachesEverything(page, 'gateway dashboard at 390');
    await shot(page, 'dashboard-gateway-390');
    assert.deepEqual(page.errors, []);
    await closePage(page);
  } finally {
    await gw.stop();
    await other.stop();
  }
});

test('admin: locked without the key; a key made in the page works, revoked it gets 401', async () => {
  // The dashboard's JSON is behind the same keys as the API.
  assert.equal((await fetch(`${keyed.base}/console/api/stats`)).status, 401);
  const page = await openPage(keyed.base);
  await page.goto(`${keyed.base}/#/admin`);
  await page.waitForSelector('#admin-key');
  assert.equal(await page.locator('#admin-tab-tenants').count(), 0, 'no admin section before the key');
  await page.fill('#admin-key', 'not-the-admin-key');
  await page.click('#admin-unlock');
  await page.waitForSelector('[data-testid=admin-status] .notice.error');
  assert.equal(await page.locator('#admin-tab-tenants').count(), 0, 'still locked after a wrong key');
  await page.fill('#admin-key', ADMIN);
  await page.click('#admin-unlock');
  await page.waitForSelector('#admin-tab-tenants');
  // The key never reaches web storage or cookies.
  const stored = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie]));
  assert.ok(!stored.includes(ADMIN), 'admin key in storage');
  await page.fill('#tenant-id', 'webtest');
  await page.fill('#tenant-name', 'Web test');
  await page.click('#tenant-create');
  await page.waitForSelector('[data-testid=tenants] td:text-is("webtest")');
  await page.click('#admin-tab-keys');
  await page.waitForSelector('#key-tenant');
  await page.selectOption('#key-tenant', 'webtest');
  await page.fill('#key-name', 'browser');
  await page.click('#key-create');
  const secret = (await page.locator('[data-testid=new-key-secret]').textContent()).trim();
  assert.match(secret, /^pgd-/);
  await shot(page, 'admin-keys');
  // The key works on the API and on the dashboard's JSON.
  const auth = { authorization: `Bearer ${secret}` };
  assert.equal((await fetch(`${keyed.base}/v1/models`, { headers: auth })).status, 200);
  const stats = await fetch(`${keyed.base}/console/api/stats`, { headers: auth });
  assert.equal(stats.status, 200);
  assert.equal((await stats.json()).kind, 'serve');
  // A key scoped to another model may not read this server's figures.
  const scoped = await (await fetch(`${keyed.base}/admin/keys`, { method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ tenant: 'webtest', models: ['another-model'] }) })).json();
  assert.equal((await fetch(`${keyed.base}/console/api/stats`, { headers: { authorization: `Bearer ${scoped.key}` } })).status, 403);
  // Revoke it in the page: the next request with it gets 401.
  const keyId = await page.locator('[data-testid=keys] tr:has(td:text-is("browser")) button[data-key-id]').getAttribute('data-key-id');
  await page.click(`[data-testid=keys] button[data-key-id="${keyId}"]`);
  await page.waitForSelector(`[data-testid=keys] tr:has(td:text-is("${keyId}")) td:text-is("revoked")`);
  assert.equal((await fetch(`${keyed.base}/v1/models`, { headers: auth })).status, 401);
  assert.equal((await fetch(`${keyed.base}/console/api/stats`, { headers: auth })).status, 401);
  // Rotation: a new secret for the same tenant, name and scope; the old key revoked at once.
  await page.fill('#key-name', 'rotating');
  await page.fill('#key-models', 'stories260K');
  await page.click('#key-create');
  await page.waitForSelector('[data-testid=keys] td:text-is("rotating")');
  const first = (await page.locator('[data-testid=new-key-secret]').textContent()).trim();
  const oldRow = page.locator('[data-testid=keys] tr:has(td:text-is("rotating")):has(button[data-rotate-key-id])');
  const oldId = await oldRow.locator('button[data-rotate-key-id]').getAttribute('data-rotate-key-id');
  await page.fill('#key-rotate-grace', '-5');
  await page.click(`button[data-rotate-key-id="${oldId}"]`);
  assert.match(await page.textContent('[data-testid=admin-status] .notice.error'), /Rotation grace/);
  assert.equal((await fetch(`${keyed.base}/v1/models`, { headers: { authorization: `Bearer ${first}` } })).status, 200);
  await page.fill('#key-rotate-grace', '0');
  await page.click(`button[data-rotate-key-id="${oldId}"]`);
  await page.waitForSelector(`[data-testid=keys] tr:has(td:text-is("${oldId}")) td:text-is("revoked")`);
  const rotated = (await page.locator('[data-testid=new-key-secret]').textContent()).trim();
  assert.match(rotated, /^pgd-/);
  assert.notEqual(rotated, first);
  assert.match(await page.textContent('.secret-box'), new RegExp(`replaces ${oldId} \\(revoked\\)`));
  assert.equal((await fetch(`${keyed.base}/v1/models`, { headers: { authorization: `Bearer ${rotated}` } })).status, 200);
  assert.equal((await fetch(`${keyed.base}/v1/models`, { headers: { authorization: `Bearer ${first}` } })).status, 401);
  const newRow = page.locator('[data-testid=keys] tr:has(td:text-is("rotating")):has(td:text-is("active"))');
  assert.deepEqual((await newRow.locator('td').allTextContents()).slice(1, 4), ['webtest', 'rotating', 'stories260K']);
  await shot(page, 'admin-key-rotated');
  // Tenant editing: a bad weight is refused in the page; a rename and a new weight reach the API.
  await page.click('#admin-tab-tenants');
  await page.click('button[data-edit-tenant="webtest"]');
  await page.fill('#edit-tenant-name', 'Web test renamed');
  await page.fill('#edit-tenant-weight', '0');
  await page.click('#edit-tenant-save');
  assert.match(await page.textContent('[data-testid=admin-status] .notice.error'), /Tenant weight: a number above 0/);
  await page.fill('#edit-tenant-weight', '2.5');
  await page.selectOption('#edit-tenant-max-class', 'batch');
  await page.click('#edit-tenant-save');
  await page.waitForSelector('[data-testid=tenants] td:text-is("Web test renamed")');
  assert.match(await page.textContent('[data-testid=admin-status]'), /updated \(name, weight, max_class\)/);
  const tenant = await (await fetch(`${keyed.base}/admin/tenants/webtest`, { headers: { authorization: `Bearer ${ADMIN}` } })).json();
  assert.equal(tenant.name, 'Web test renamed');
  assert.equal(tenant.weight, 2.5);
  assert.equal(tenant.max_class, 'batch');
  await page.click('button[data-edit-tenant="webtest"]');
  await page.selectOption('#edit-tenant-max-class', '');
  await page.click('#edit-tenant-save');
  await page.waitForSelector('[data-testid=tenants] tr:has(td:text-is("webtest")) td:text-is("plan")');
  // Usage, limits and batches render through the same admin key.
  await page.click('#admin-tab-usage');
  await page.waitForSelector('[data-testid=usage]');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#usage-csv')]);
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(csv.split('\n')[0], /requests.*prompt_tokens.*cost/);
  await shot(page, 'admin-usage');
  await page.click('#admin-tab-limits');
  await page.waitForSelector('[data-testid=limits]');
  assert.deepEqual(page.errors.filter(e => !/401|Failed to load resource/.test(e)), []);
  await closePage(page);
});

test('admin batches: a batch of the API key shows its progress and its output file', async () => {
  const adminHeaders = { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' };
  const secret = (await (await fetch(`${keyed.base}/admin/keys`, { method: 'POST', headers: adminHeaders,
    body: JSON.stringify({ tenant: 'webtest', name: 'batches' }) })).json()).key;
  const auth = { authorization: `Bearer ${secret}` };
  const model = (await (await fetch(`${keyed.base}/v1/models`, { headers: auth })).json()).data[0].id;
  const lines = [0, 1].map(i => JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions',
    body: { model, max_tokens: 8, messages: [{ role: 'user', content: `Story ${i}` }] } })).join('\n') + '\n';
  const form = new FormData();
  form.set('purpose', 'batch');
  form.set('file', new Blob([lines], { type: 'application/jsonl' }), 'lines.jsonl');
  const file = await (await fetch(`${keyed.base}/v1/files`, { method: 'POST', headers: auth, body: form })).json();
  const batch = await (await fetch(`${keyed.base}/v1/batches`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }) })).json();
  assert.match(batch.id ?? '', /^batch_/, JSON.stringify(batch));
  const page = await openPage(keyed.base);
  await page.goto(`${keyed.base}/#/admin`);
  await page.fill('#api-key', secret);
  await page.press('#api-key', 'Tab');
  await page.fill('#admin-key', ADMIN);
  await page.click('#admin-unlock');
  await page.waitForSelector('#admin-tab-batches');
  const row = page.locator(`[data-testid=batches] tr:has(td:text-is("${batch.id}"))`);
  for (let i = 0; i < 40; ++i) {
    await page.click('#admin-tab-batches');
    await row.waitFor();
    if ((await row.locator('td').nth(1).textContent()) === 'completed') break;
    await sleep(250);
  }
  assert.equal(await row.locator('td').nth(1).textContent(), 'completed');
  assert.match(await row.locator('td').nth(4).textContent(), /2 \/ 2/);
  const [download] = await Promise.all([page.waitForEvent('download'), row.locator('button', { hasText: 'Output' }).click()]);
  const out = readFileSync(await download.path(), 'utf8').trim().split('\n').map(l => JSON.parse(l));
  assert.deepEqual(out.map(o => o.custom_id).sort(), ['line-0', 'line-1']);
  await shot(page, 'admin-batches');
  await closePage(page);
});

test('a server killed mid-stream shows an error and the page stays usable', async () => {
  const victim = await Server.start(bin, modelPath, NoClient, ['-c', '512']);
  const relay = await startRelay(victim.port);
  try {
    const page = await openPlayground(relay.base);
    await page.fill('#pg-max-tokens', '400');
    await page.fill('#pg-temperature', '0');
    relay.throttle = true;
    await page.fill('#pg-prompt', 'Once upon a time');
    await page.click('#pg-send');
    await page.waitForFunction(() => (document.querySelector('[data-testid=answer]')?.textContent ?? '').length > 0,
                               null, { timeout: 20000 });
    victim.proc.kill('SIGKILL');
    await page.waitForSelector('article.msg.assistant .notice.error', { timeout: 10000 });
    const err = await page.textContent('article.msg.assistant .notice.error');
    assert.match(err, /^Error: /);
    assert.equal(await page.isEnabled('#pg-send'), true, 'Send works again');
    assert.equal(await page.isDisabled('#pg-stop-button'), true);
    await shot(page, 'playground-server-killed');
    await closePage(page);
  } finally {
    relay.server.close();
    await victim.stop();
  }
});

test('every page fits 1280 and 390 px and Tab reaches every control', async () => {
  for (const width of [1280, 390]) {
    const page = await openPage(keyed.base, width);
    for (const name of ['playground', 'dashboard', 'admin']) {
      await page.goto(`${keyed.base}/#/${name}`);
      await page.waitForSelector(name === 'admin' ? '#admin-key' : name === 'playground' ? '#pg-send' : '[data-testid=chart-requests]');
      await sleep(300);
      await assertFits(page, `${name} at ${width}`);
      await assertTabReachesEverything(page, `${name} at ${width}`);
      if (name === 'admin') {
        // Unlocked: every admin section by keyboard too.
        await page.fill('#admin-key', ADMIN);
        await page.keyboard.press('Enter');
        await page.waitForSelector('#admin-tab-tenants');
        for (const tab of ['tenants', 'keys', 'limits', 'usage', 'batches']) {
          await page.click(`#admin-tab-${tab}`);
          await page.waitForSelector(`#admin-tab-${tab}[aria-selected="true"]`);
          await sleep(200);
          if (tab === 'tenants') await page.click('button[data-edit-tenant]');  // the edit form too
          await assertFits(page, `admin ${tab} at ${width}`);
          await assertTabReachesEverything(page, `admin ${tab} at ${width}`);
        }
      }
      await shot(page, `${name}-${width}`);
    }
    await closePage(page);
  }
});

test('no page request left its origin', async () => {
  assert.deepEqual(offOrigin, []);
});

await run({
  before: async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM, headless: true,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    plain = await Server.start(bin, modelPath, NoClient, ['-c', '512']);
    keyed = await Server.start(bin, modelPath, NoClient,
      ['-c', '512', '--db', `sqlite://${join(dir, 'control.db')}`, '--admin-key-env', 'PAGODA_WEB_ADMIN',
       '--allow-insecure-keys', '--data-dir', join(dir, 'data')]);
    console.log(`screenshots in ${artifacts}`);
  },
  after: async () => {
    await browser?.close();
    await plain?.stop();
    await keyed?.stop();
  },
});
