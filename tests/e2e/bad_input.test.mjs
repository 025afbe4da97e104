// Bad input through HTTP: every class of malformed request gets the right
// 4xx with an OpenAI error object {"error": {"message","type","param","code"}},
// never a crash or a hang, and the server serves normally afterwards.
// Checked with raw fetch (byte-exact bodies) and through the openai client's
// error objects. Usage: node bad_input.test.mjs <pagoda binary> <model.gguf>
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { Server, assertErrorShape, makeRunner, setup } from './harness.mjs';

const { bin, modelPath, OpenAI } = await setup();
const kCtx = 256;
const { test, run } = makeRunner();
let server;

const chat = '/v1/chat/completions';
const cmpl = '/v1/completions';
const msgs = (content) => [{ role: 'user', content }];
const kBadText = ['invalid_utf8', 'invalid_json'];

// POSTs `body` (an object is JSON-encoded; a string or Buffer is sent as is).
async function post(path, body, headers = {}) {
  const data = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const r = await fetch(server.base + path, {
    method: 'POST', body: data, headers: { 'Content-Type': 'application/json', ...headers },
    signal: AbortSignal.timeout(15000),
  });
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: r.status, headers: r.headers, text, json };
}

// [what, path, body, status, code, param]; code/param undefined: not checked;
// code an array: any of those.
const cases = [
  // Not JSON, or not a JSON object.
  ['truncated JSON', chat, '{"messages": [', 400, 'invalid_json', null],
  ['trailing garbage', cmpl, '{"prompt": "x"} x', 400, 'invalid_json', null],
  ['single quotes', cmpl, "{'prompt': 'x'}", 400, 'invalid_json', null],
  ['top level array', chat, '[1, 2]', 400, 'invalid_json', null],
  ['top level string', cmpl, '"prompt"', 400, 'invalid_json', null],
  ['empty body', cmpl, '', 400, 'invalid_json', null],
  ['nesting past the limit', cmpl, '{"prompt":' + '['.repeat(200) + ']'.repeat(200) + '}', 400, 'invalid_json', null],
  ['NaN literal', cmpl, '{"prompt":"x","temperature":NaN}', 400, 'invalid_json', null],
  // Wrong JSON types.
  ['max_tokens as string', chat, { messages: msgs('x'), max_tokens: '5' }, 400, 'invalid_type', 'max_tokens'],
  ['max_tokens as float', cmpl, '{"prompt":"x","max_tokens":5.0}', 400, 'invalid_type', 'max_tokens'],
  ['max_tokens past int64', cmpl, '{"prompt":"x","max_tokens":99999999999999999999999}', 400, 'invalid_type', 'max_tokens'],
  ['messages as string', chat, { messages: 'hi' }, 400, 'invalid_type', 'messages'],
  ['message not an object', chat, { messages: ['hi'] }, 400, 'invalid_type', 'messages[0]'],
  ['content as number', chat, { messages: [{ role: 'user', content: 5 }] }, 400, 'invalid_type', 'messages[0].content'],
  ['role as number', chat, { messages: [{ role: 1, content: 'x' }] }, 400, 'invalid_type', 'messages[0].role'],
  ['prompt as number', cmpl, { prompt: 5 }, 400, 'invalid_type', 'prompt'],
  ['prompt mixing types', cmpl, { prompt: ['a', 1] }, 400, 'invalid_type', undefined],
  ['temperature as string', cmpl, { prompt: 'x', temperature: 'hot' }, 400, 'invalid_type', 'temperature'],
  ['stream as string', cmpl, { prompt: 'x', stream: 'yes' }, 400, 'invalid_type', 'stream'],
  ['stop as number', cmpl, { prompt: 'x', stop: 5 }, 400, 'invalid_type', 'stop'],
  ['n as float', cmpl, { prompt: 'x', n: 1.5 }, 400, 'invalid_type', 'n'],
  ['model as number', chat, { model: 7, messages: msgs('x') }, 400, 'invalid_type', 'model'],
  // Unknown model.
  ['unknown model (chat)', chat, { model: 'gpt-4o', messages: msgs('x') }, 404, 'model_not_found', 'model'],
  ['unknown model (completions)', cmpl, { model: 'nope', prompt: 'x' }, 404, 'model_not_found', 'model'],
  // Empty or missing.
  ['empty messages', chat, { messages: [] }, 400, 'empty_array', 'messages'],
  ['missing messages', chat, { max_tokens: 3 }, 400, 'missing_required_parameter', 'messages'],
  ['missing role', chat, { messages: [{ content: 'x' }] }, 400, 'missing_required_parameter', 'messages[0].role'],
  ['empty prompt array', cmpl, { prompt: [] }, 400, 'empty_array', 'prompt'],
  ['missing prompt', cmpl, { max_tokens: 3 }, 400, 'missing_required_parameter', 'prompt'],
  // Context.
  ['prompt longer than the context', cmpl, { prompt: 'hello world '.repeat(300), max_tokens: 1 }, 400,
   'context_length_exceeded', 'prompt'],
  ['messages longer than the context', chat, { messages: msgs('hello world '.repeat(300)) }, 400,
   'context_length_exceeded', 'messages'],
  ['token prompt longer than the context', cmpl, { prompt: Array(kCtx + 10).fill(300), max_tokens: 1 }, 400,
   'context_length_exceeded', 'prompt'],
  ['max_tokens past the context', cmpl, { prompt: 'x', max_tokens: kCtx }, 400, 'context_length_exceeded',
   'max_tokens'],
  ['max_completion_tokens past the context', chat, { messages: msgs('x'), max_completion_tokens: 100000 }, 400,
   'context_length_exceeded', 'max_completion_tokens'],
  ['max_tokens 0', cmpl, { prompt: 'x', max_tokens: 0 }, 400, 'invalid_value', 'max_tokens'],
  ['max_tokens -1', chat, { messages: msgs('x'), max_tokens: -1 }, 400, 'invalid_value', 'max_tokens'],
  ['max_completion_tokens 0', chat, { messages: msgs('x'), max_completion_tokens: 0 }, 400, 'invalid_value',
   'max_completion_tokens'],
  // n.
  ['n too large', cmpl, { prompt: 'x', n: 17 }, 400, 'invalid_value', 'n'],
  ['n huge', chat, { messages: msgs('x'), n: 1e9 }, 400, 'invalid_value', 'n'],
  ['n 0', chat, { messages: msgs('x'), n: 0 }, 400, 'invalid_value', 'n'],
  // Roles.
  ['unknown role', chat, { messages: [{ role: 'wizard', content: 'x' }] }, 400, 'invalid_value', 'messages[0].role'],
  ['unknown role later', chat, { messages: [{ role: 'user', content: 'x' }, { role: 'robot', content: 'y' }] }, 400,
   'invalid_value', 'messages[1].role'],
  ['function role', chat, { messages: [{ role: 'function', content: 'x' }] }, 400, 'unsupported_value',
   'messages[0].role'],
  // Invalid UTF-8 as raw bytes.
  ['invalid byte in a value', cmpl, Buffer.from([...Buffer.from('{"prompt":"a'), 0xff, 0xfe, ...Buffer.from('b"}')]),
   400, 'invalid_utf8', null],
  ['invalid byte in a key', cmpl, Buffer.from([...Buffer.from('{"pro'), 0xc3, ...Buffer.from('mpt":"ab"}')]), 400,
   'invalid_utf8', null],
  ['overlong encoding', cmpl, Buffer.from([...Buffer.from('{"prompt":"a'), 0xc0, 0xaf, ...Buffer.from('"}')]), 400,
   'invalid_utf8', null],
  ['UTF-8 encoded surrogate', chat,
   Buffer.from([...Buffer.from('{"messages":[{"role":"user","content":"'), 0xed, 0xa0, 0x80, ...Buffer.from('"}]}')]),
   400, 'invalid_utf8', null],
  ['truncated sequence at the end', cmpl, Buffer.from([...Buffer.from('{"prompt":"a"}'), 0xe2, 0x82]), 400,
   undefined, null],
  // Lone surrogates as \u escapes: the JSON parser rejects them (today as
  // invalid_json; invalid_utf8 would say more).
  ['lone high surrogate escape', cmpl, '{"prompt":"a\\ud800b"}', 400, kBadText, null],
  ['lone low surrogate escape', chat, '{"messages":[{"role":"user","content":"\\udc00"}]}', 400, kBadText, null],
  ['high surrogate escape at the end', cmpl, '{"prompt":"\\ud83d"}', 400, kBadText, null],
  ['reversed surrogate pair', cmpl, '{"prompt":"\\ude00\\ud83d"}', 400, kBadText, null],
  // Other value errors.
  ['unknown field', chat, { messages: msgs('x'), max_token: 5 }, 400, 'unknown_parameter', 'max_token'],
  ['temperature out of range', chat, { messages: msgs('x'), temperature: 9 }, 400, 'invalid_value', 'temperature'],
  ['token id outside the vocabulary', cmpl, { prompt: [1, 999999] }, 400, 'invalid_value', 'prompt[1]'],
  ['negative token id', cmpl, { prompt: [1, -5] }, 400, 'invalid_value', 'prompt[1]'],
  ['logit_bias key not an id', cmpl, { prompt: 'x', logit_bias: { abc: 1 } }, 400, undefined, undefined],
  ['top_logprobs without logprobs', chat, { messages: msgs('x'), top_logprobs: 2 }, 400, undefined, 'top_logprobs'],
  ['stream_options without stream', chat, { messages: msgs('x'), stream_options: { include_usage: true } }, 400,
   undefined, 'stream_options'],
  ['bad request with stream: true', chat, { messages: [], stream: true }, 400, 'empty_array', 'messages'],
];

test('every bad request gets its 4xx and an OpenAI error object', async () => {
  const problems = [];
  for (const [what, path, body, status, code, param] of cases) {
    const r = await post(path, body);
    try {
      assert.equal(r.status, status, `status: ${r.text}`);
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
      assertErrorShape(assert, r.json, what);
      assert.equal(r.json.error.type, 'invalid_request_error');
      if (Array.isArray(code)) assert.ok(code.includes(r.json.error.code), r.text);
      else if (code !== undefined) assert.equal(r.json.error.code, code, r.text);
      if (param !== undefined) assert.equal(r.json.error.param, param, r.text);
    } catch (e) {
      problems.push(`${what}: ${e.message}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('a body over the limit is 413, by Content-Length and when chunked', async () => {
  const big = Buffer.alloc(9 << 20, 'a');
  big.write('{"prompt":"', 0);
  big.write('"}', big.length - 2);
  const r = await post(cmpl, big);
  assert.equal(r.status, 413);
  assertErrorShape(assert, r.json, 'content-length 413');
  assert.equal(r.json.error.code, 'request_too_large');
  // Without Content-Length (Transfer-Encoding: chunked) the limit applies
  // while reading; the server may close the connection once it has answered.
  const chunked = await new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: server.port, method: 'POST', path: cmpl,
                              headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' } },
                            (res) => {
                              let text = '';
                              res.on('data', d => { text += d; });
                              res.on('end', () => resolve({ status: res.statusCode, text }));
                            });
    req.on('error', (e) => resolve({ status: 0, error: e }));
    req.setTimeout(15000, () => reject(new Error('chunked 413 hung')));
    const piece = Buffer.alloc(1 << 20, 'a');
    req.write('{"prompt":"');
    let sent = 0;
    const pump = () => {
      while (sent < 12) {
        ++sent;
        if (!req.write(piece)) return req.once('drain', pump);
      }
      req.end('"}');
    };
    pump();
  });
  console.log(`  chunked: ${chunked.status || chunked.error.code}`);
  if (chunked.status !== 0) {
    assert.equal(chunked.status, 413, chunked.text);
    assertErrorShape(assert, JSON.parse(chunked.text), 'chunked 413');
  } else {
    // The server answered and closed while node was still writing: accept a
    // reset, but the server must still be there.
    assert.ok(['ECONNRESET', 'EPIPE'].includes(chunked.error.code), String(chunked.error));
  }
});

test('an oversized header is 431', async () => {
  const r = await post(cmpl, { prompt: 'x', max_tokens: 1 }, { 'X-Big': 'a'.repeat(20000) }).catch(e => ({ error: e }));
  if (r.error) throw r.error;
  assert.equal(r.status, 431);
  assertErrorShape(assert, r.json, '431');
});

test('wrong method and unknown route', async () => {
  let r = await fetch(server.base + cmpl, { signal: AbortSignal.timeout(5000) });
  assert.equal(r.status, 405);
  assertErrorShape(assert, await r.json(), '405');
  r = await fetch(server.base + '/v1/nothing', { method: 'POST', body: '{}', signal: AbortSignal.timeout(5000) });
  assert.equal(r.status, 404);
  assertErrorShape(assert, await r.json(), '404');
});

test('malformed HTTP is 400 bad_request, not a crash', async () => {
  const answer = await new Promise((resolve, reject) => {
    const sock = connect(server.port, '127.0.0.1', () => sock.write('POST /v1/completions HTTP/1.1\r\nHost: x\r\n' +
                                                                  'Content-Length: banana\r\n\r\n{}'));
    let text = '';
    sock.on('data', d => { text += d; });
    sock.on('end', () => resolve(text));
    sock.on('error', reject);
    sock.setTimeout(10000, () => { sock.destroy(); reject(new Error('malformed HTTP hung')); });
  });
  assert.match(answer, /^HTTP\/1\.1 400 /);
});

test('the openai client sees status, type, param and code', async () => {
  const client = server.client;
  const expectations = [
    [() => client.chat.completions.create({ model: 'gpt-4o', messages: msgs('x') }), 404, 'model', 'model_not_found'],
    [() => client.chat.completions.create({ messages: [] }), 400, 'messages', 'empty_array'],
    [() => client.completions.create({ prompt: 'x', max_tokens: 0 }), 400, 'max_tokens', 'invalid_value'],
    [() => client.completions.create({ prompt: 'x', n: 99 }), 400, 'n', 'invalid_value'],
    [() => client.chat.completions.create({ messages: [{ role: 'wizard', content: 'x' }] }), 400,
     'messages[0].role', 'invalid_value'],
    [() => client.completions.create({ prompt: 'hello '.repeat(400), max_tokens: 1, stream: true }), 400, 'prompt',
     'context_length_exceeded'],
  ];
  for (const [call, status, param, code] of expectations) {
    await assert.rejects(call(), (e) => {
      assert.equal(e.status, status);
      assert.equal(e.param, param);
      assert.equal(e.code, code);
      assert.equal(e.type, 'invalid_request_error');
      assert.equal(typeof e.error?.message, 'string');
      return true;
    });
  }
});

test('valid surrogate pairs and non-ASCII text are accepted', async () => {
  const r = await post(cmpl, '{"prompt":"a\\ud83d\\ude00 caf\\u00e9","max_tokens":2,"temperature":0}');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices.length, 1);
});

test('after all that the server still answers, and holds no KV blocks', async () => {
  assert.ok(!server.exited);
  assert.equal((await fetch(server.base + '/health')).status, 200);
  const req = { prompt: 'Once upon a time', max_tokens: 24, temperature: 0 };
  const a = await server.client.completions.create(req);
  const b = await server.client.completions.create(req);
  assert.equal(a.choices[0].text, b.choices[0].text);
  const m = await server.waitIdle();
  assert.equal(m.num_requests_running, 0);
  assert.equal(m.kv_cache_usage_perc, 0);
  assert.equal(m.request_failed_total ?? 0, 0);
});

await run({
  before: async () => { server = await Server.start(bin, modelPath, OpenAI, ['--ctx-size', String(kCtx)]); },
  after: async () => { if (server) assert.equal(await server.stop(), 0); },
});
