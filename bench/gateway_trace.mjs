#!/usr/bin/env node
// Session trace generator and driver for a gateway (or any OpenAI-compatible
// endpoint): agentic and chat sessions with long shared system prompts,
// growing multi-turn histories and think times between turns, the traffic in
// which where a request lands decides whether its prefix is already cached.
//
// Each session belongs to one "app" (its system prompt is shared by every
// session of that app). A turn sends system prompt + the whole history + a new
// user message, streams the answer, appends it to the history and waits a
// think time (exponential, mean --think-ms) before the next turn. Sessions
// start spread over --ramp-ms. All text is drawn from a fixed word list by a
// seeded generator, so a trace is identical from run to run.
//
// Reported (one JSON object on stdout): requests, failures, prompt and cached
// tokens (usage.prompt_tokens_details.cached_tokens, so the hit rate is what
// the replicas report, not what the gateway predicts), the prefix-cache hit
// rate, time to first token (median, p90, mean), generated tokens per second
// over the run, wall time, and per-replica request counts when the responses
// carry x-pagoda-replica.
//
// Node >= 18, no dependencies.
// Usage: node bench/gateway_trace.mjs --url http://127.0.0.1:8080 --model NAME
//          [--kind agentic|chat] [--sessions 16] [--turns T] [--apps 2]
//          [--system-words S] [--user-words U] [--max-tokens 16]
//          [--think-ms 1000] [--ramp-ms 4000] [--seed 1] [--api completions|chat]
//          [--label NAME] [--session-header x-session-id]
//   --kind agentic (defaults S 800, U 300, T 10): a system prompt of tool
//     descriptions and, each turn, a long tool result; by the last turn the
//     history is most of the prompt (coding agents: a few thousand system
//     tokens, tens of thousands of history).
//   --kind chat (defaults S 300, U 60, T 6): a shorter system prompt, short turns.

import { parseArgs, quantile, splitMix64 } from './bench_util.mjs';

const args = parseArgs(process.argv.slice(2));
const url = (args.url ?? 'http://127.0.0.1:8080').replace(/\/$/, '');
const model = args.model ?? '';
const kind = args.kind ?? 'agentic';
const api = args.api ?? 'completions';
const nSessions = Number(args.sessions ?? 16);
const agentic = kind !== 'chat';
const nTurns = Number(args.turns ?? (agentic ? 10 : 6));
const nApps = Number(args.apps ?? 2);
const systemWords = Number(args['system-words'] ?? (agentic ? 800 : 300));
const userWords = Number(args['user-words'] ?? (agentic ? 300 : 60));
const maxTokens = Number(args['max-tokens'] ?? 16);
const thinkMs = Number(args['think-ms'] ?? 1000);
const rampMs = Number(args['ramp-ms'] ?? 4000);
const sessionHeader = args['session-header'] ?? 'x-session-id';
const label = args.label ?? '';
const nextU64 = splitMix64(BigInt(Number(args.seed ?? 1)) * 0x9e3779b97f4a7c15n + 7n);


const uniform = () => Number(nextU64() >> 11n) / 2 ** 53;

const kWords = ('the a of to and in is it that for on with as was be by at this have from or one had ' +
  'not but what all were when we there can an your which their said if do will each about how up out ' +
  'them then she many some so these would other into has more her two like him see time could no make ' +
  'than first been its who now people my made over did down only way find use may water long little very ' +
  'after words called just where most know get through back much before go good new write our used me man ' +
  'too any day same right look think also around another came come work three word must because does part ' +
  'tool call file read search result error value return function query table index cache block request').split(' ');
const words = (n) => Array.from({ length: n }, () => kWords[Math.floor(uniform() * kWords.length)]).join(' ');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const expo = (mean) => -Math.log(1 - uniform()) * mean;

const systemPrompts = Array.from({ length: nApps }, (_, i) =>
  `System: you are assistant ${i} for ${kind} work. Tools and rules follow. ${words(systemWords)}`);
// The whole trace is drawn up front, so timing does not change its text.
const sessions = Array.from({ length: nSessions }, (_, s) => ({
  id: `s${s}`,
  app: s % nApps,
  start: uniform() * rampMs,
  users: Array.from({ length: nTurns }, () => words(userWords)),
  thinks: Array.from({ length: nTurns }, () => expo(thinkMs)),
}));

const results = [];
const replicaCounts = {};

async function turn(session, history, userText) {
  const sys = systemPrompts[session.app];
  const headers = { 'content-type': 'application/json', [sessionHeader]: session.id };
  let body;
  if (api === 'chat') {
    const messages = [{ role: 'system', content: sys }];
    for (const h of history) messages.push({ role: 'user', content: h.user }, { role: 'assistant', content: h.answer });
    messages.push({ role: 'user', content: userText });
    body = { model, messages, max_tokens: maxTokens, temperature: 0, stream: true,
             stream_options: { include_usage: true }, user: session.id };
  } else {
    let prompt = sys + '\n';
    for (const h of history) prompt += `User: ${h.user}\nAssistant: ${h.answer}\n`;
    prompt += `User: ${userText}\nAssistant:`;
    body = { model, prompt, max_tokens: maxTokens, temperature: 0, stream: true,
             stream_options: { include_usage: true }, user: session.id };
  }
  const t0 = performance.now();
  let ttft = null, text = '', usage = null, replica = null;
  const res = await fetch(`${url}/v1/${api === 'chat' ? 'chat/completions' : 'completions'}`,
                          { method: 'POST', headers, body: JSON.stringify(body) });
  replica = res.headers.get('x-pagoda-replica');
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n\n')) >= 0) {
      const event = buf.slice(0, nl);
      buf = buf.slice(nl + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(`stream error: ${j.error.message}`);
        if (j.usage) usage = j.usage;
        const c = j.choices?.[0];
        const piece = c?.text ?? c?.delta?.content ?? '';
        if (piece && ttft === null) ttft = performance.now() - t0;
        text += piece;
      }
    }
  }
  if (ttft === null) ttft = performance.now() - t0;
  return { ttft, text, usage, replica };
}

async function runSession(session) {
  await sleep(session.start);
  const history = [];
  for (let t = 0; t < nTurns; ++t) {
    try {
      const r = await turn(session, history, session.users[t]);
      results.push({ ok: true, ttft: r.ttft, prompt: r.usage?.prompt_tokens ?? 0,
                     cached: r.usage?.prompt_tokens_details?.cached_tokens ?? 0,
                     completion: r.usage?.completion_tokens ?? 0 });
      if (r.replica) replicaCounts[r.replica] = (replicaCounts[r.replica] ?? 0) + 1;
      history.push({ user: session.users[t], answer: r.text });
    } catch (e) {
      results.push({ ok: false, error: String(e.message ?? e) });
      process.stderr.write(`session ${session.id} turn ${t}: ${e.message ?? e}\n`);
      history.push({ user: session.users[t], answer: '' });
    }
    await sleep(session.thinks[t]);
  }
}


const wall0 = performance.now();
await Promise.all(sessions.map(runSession));
const wall = (performance.now() - wall0) / 1000;
const ok = results.filter((r) => r.ok);
const prompt = ok.reduce((a, r) => a + r.prompt, 0);
const cached = ok.reduce((a, r) => a + r.cached, 0);
const completion = ok.reduce((a, r) => a + r.completion, 0);
const ttfts = ok.map((r) => r.ttft);
console.log(JSON.stringify({
  label, kind, api, sessions: nSessions, turns: nTurns, requests: results.length,
  failures: results.length - ok.length, prompt_tokens: prompt, cached_tokens: cached,
  hit_rate: prompt ? +(cached / prompt).toFixed(4) : 0,
  ttft_ms_p50: +(quantile(ttfts, 0.5) ?? 0).toFixed(1), ttft_ms_p90: +(quantile(ttfts, 0.9) ?? 0).toFixed(1),
  ttft_ms_mean: +(ttfts.reduce((a, b) => a + b, 0) / Math.max(1, ttfts.length)).toFixed(1),
  gen_tok_s: +(completion / wall).toFixed(2), wall_s: +wall.toFixed(1), replicas: replicaCounts,
}));
