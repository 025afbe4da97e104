// Playground: chat with any served model or alias (GET /v1/models), streamed
// over fetch + SSE, with the API's sampling parameters, system prompt, stop
// strings, JSON-schema structured output and tool definitions. Each answer
// shows its reasoning apart from its content, its usage (prompt, cached,
// completion tokens), time to first token and tokens per second; the request
// is shown as curl and as openai SDK code. Output is only ever set as text.
import { api, postStream } from './api';
import { append, button, clear, field, h, input, notice, select } from './dom';
import { checkSchema } from './schema_check';
import { curlSnippet, jsSnippet, pythonSnippet } from './snippets';
import { sseEvents, StreamBroken } from './sse';

interface ToolCall { id?: string; type: 'function'; function: { name: string; arguments: string } }
interface Message { role: 'system' | 'user' | 'assistant' | 'tool'; content: string | null; tool_calls?: ToolCall[];
  tool_call_id?: string }
interface Usage { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } }

const DEFAULT_SCHEMA = JSON.stringify({
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0, maximum: 150 } },
  required: ['name', 'age'],
  additionalProperties: false,
}, null, 2);

const DEFAULT_TOOLS = JSON.stringify([{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}], null, 2);

// One answer's bubble: reasoning, content, tool calls, stats, status.
class AnswerView {
  el: HTMLElement;
  reasoning = h('pre', { class: 'reasoning-text', 'data-testid': 'reasoning' });
  reasoningBox = h('details', { class: 'reasoning', hidden: true }, h('summary', {}, 'Reasoning'), this.reasoning);
  content = h('pre', { class: 'content', 'data-testid': 'answer' });
  tools = h('pre', { class: 'tool-calls', hidden: true, 'data-testid': 'tool-calls' });
  json = h('div', { class: 'json-result', hidden: true, 'data-testid': 'json-result' });
  stats = h('p', { class: 'stats', 'data-testid': 'answer-stats' });
  status = h('div', { class: 'answer-status' });

  constructor() {
    this.el = h('article', { class: 'msg assistant', 'aria-label': 'Assistant answer' },
      h('h3', { class: 'role' }, 'assistant'), this.reasoningBox, this.content, this.tools, this.json, this.stats,
      this.status);
  }
  addReasoning(t: string) { this.reasoningBox.hidden = false; this.reasoning.textContent += t; }
  addContent(t: string) { this.content.textContent += t; }
  showTools(calls: ToolCall[]) {
    this.tools.hidden = calls.length === 0;
    this.tools.textContent = calls.map(c => `${c.function.name}(${c.function.arguments})`).join('\n');
  }
  fail(text: string) { clear(this.status); this.status.appendChild(notice('error', text)); this.el.classList.add('failed'); }
}

export function playgroundPage(root: HTMLElement): () => void {
  const model = select([], { id: 'pg-model', 'aria-label': 'Model' });
  const system = h('textarea', { id: 'pg-system', rows: 2, placeholder: 'You are a helpful assistant.' });
  const temperature = input({ type: 'number', id: 'pg-temperature', min: 0, max: 2, step: 0.1, value: '0.7' });
  const topP = input({ type: 'number', id: 'pg-top-p', min: 0, max: 1, step: 0.05, value: '1' });
  const maxTokens = input({ type: 'number', id: 'pg-max-tokens', min: 1, step: 1, value: '128' });
  const seed = input({ type: 'number', id: 'pg-seed', step: 1, placeholder: 'random' });
  const stop = h('textarea', { id: 'pg-stop', rows: 2, placeholder: 'one per line' });
  const stream = input({ type: 'checkbox', id: 'pg-stream', checked: true });
  const format = select([['text', 'text'], ['json_object', 'JSON object'], ['json_schema', 'JSON schema']],
                        { id: 'pg-format' });
  const schema = h('textarea', { id: 'pg-schema', rows: 8, spellcheck: 'false' });
  schema.value = DEFAULT_SCHEMA;
  const useTools = input({ type: 'checkbox', id: 'pg-use-tools' });
  const tools = h('textarea', { id: 'pg-tools', rows: 8, spellcheck: 'false' });
  tools.value = DEFAULT_TOOLS;
  const toolChoice = select([['auto', 'auto'], ['required', 'required'], ['none', 'none']], { id: 'pg-tool-choice' });
  const schemaField = field('Schema', schema, 'response_format json_schema');
  const toolFields = h('div', { class: 'tool-fields' }, field('Tools (JSON array)', tools), field('tool_choice', toolChoice));
  const syncVisibility = () => {
    schemaField.hidden = format.value !== 'json_schema';
    toolFields.hidden = !useTools.checked;
  };
  format.addEventListener('change', syncVisibility);
  useTools.addEventListener('change', syncVisibility);

  const log = h('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', 'data-testid': 'log' });
  const prompt = h('textarea', { id: 'pg-prompt', rows: 3, placeholder: 'Message (Ctrl+Enter sends)', 'aria-label': 'Message' });
  const pageStatus = h('div', { class: 'page-status' });
  const codeKind = select([['curl', 'curl'], ['python', 'openai SDK (Python)'], ['js', 'openai SDK (JavaScript)']],
                          { id: 'pg-code-kind', 'aria-label': 'Code language' });
  const code = h('pre', { class: 'code', id: 'pg-code', 'data-testid': 'code', tabindex: 0 });
  let history: Message[] = [];
  let inflight: AbortController | null = null;
  let lastBody: Record<string, unknown> | null = null;

  const sendButton = button('Send', () => void send(), { id: 'pg-send', class: 'primary' });
  const stopButton = button('Stop', () => inflight?.abort(), { id: 'pg-stop-button', disabled: true });
  const clearButton = button('New chat', () => { history = []; clear(log); }, { id: 'pg-clear' });

  function renderCode() {
    if (!lastBody) { code.textContent = 'Send a message to see its request here.'; return; }
    const origin = window.location.origin;
    code.textContent = codeKind.value === 'curl' ? curlSnippet(origin, lastBody)
      : codeKind.value === 'python' ? pythonSnippet(origin, lastBody) : jsSnippet(origin, lastBody);
  }
  codeKind.addEventListener('change', renderCode);
  const copyButton = button('Copy', () => void copyCode(), { id: 'pg-copy' });
  async function copyCode() {
    try {
      await navigator.clipboard.writeText(code.textContent ?? '');
      copyButton.textContent = 'Copied';
    } catch {
      // No clipboard on plain-HTTP origins other than localhost: select the text instead.
      const range = document.createRange();
      range.selectNodeContents(code);
      const sel = window.getSelection();
      sel?.removeAllRanges();
      sel?.addRange(range);
      copyButton.textContent = 'Selected: press Ctrl+C';
    }
    setTimeout(() => { copyButton.textContent = 'Copy'; }, 2000);
  }

  // The request body, or an error naming the field that does not parse.
  function buildBody(): Record<string, unknown> {
    const messages: Message[] = [];
    if (system.value.trim()) messages.push({ role: 'system', content: system.value });
    messages.push(...history);
    const body: Record<string, unknown> = { model: model.value, messages };
    const num = (el: HTMLInputElement) => (el.value === '' ? undefined : Number(el.value));
    if (num(temperature) !== undefined) body.temperature = num(temperature);
    if (num(topP) !== undefined) body.top_p = num(topP);
    if (num(maxTokens) !== undefined) body.max_tokens = num(maxTokens);
    if (num(seed) !== undefined) body.seed = num(seed);
    const stops = stop.value.split('\n').filter(s => s !== '');
    if (stops.length) body.stop = stops;
    if (format.value === 'json_object') body.response_format = { type: 'json_object' };
    if (format.value === 'json_schema') {
      let parsed: unknown;
      try { parsed = JSON.parse(schema.value); } catch (e) { throw new Error(`Schema: not JSON (${(e as Error).message})`); }
      body.response_format = { type: 'json_schema', json_schema: { name: 'playground', schema: parsed, strict: true } };
    }
    if (useTools.checked) {
      let parsed: unknown;
      try { parsed = JSON.parse(tools.value); } catch (e) { throw new Error(`Tools: not JSON (${(e as Error).message})`); }
      if (!Array.isArray(parsed)) throw new Error('Tools: expected a JSON array of tool definitions');
      body.tools = parsed;
      body.tool_choice = toolChoice.value;
    }
    if (stream.checked) { body.stream = true; body.stream_options = { include_usage: true }; }
    return body;
  }

  async function loadModels() {
    clear(pageStatus);
    try {
      const list = await api.get<{ data: Array<{ id: string }> }>('/v1/models');
      const current = model.value;
      clear(model);
      for (const m of list.data) model.appendChild(h('option', { value: m.id }, m.id));
      if (current && list.data.some(m => m.id === current)) model.value = current;
      if (!list.data.length) pageStatus.appendChild(notice('info', 'No model is served.'));
    } catch (e) {
      pageStatus.appendChild(notice('error', `Models: ${(e as Error).message} (an API key may be needed: enter it at the top).`));
    }
  }

  // A message bubble of the conversation (user input and tool results: text only).
  function showMessage(role: 'user' | 'tool', heading: string, text: string, testid: string) {
    append(log, h('article', { class: `msg ${role}`, 'aria-label': role === 'user' ? 'Your message' : heading },
                  h('h3', { class: 'role' }, heading), h('pre', { class: 'content', 'data-testid': testid }, text)));
  }

  async function send() {
    if (inflight) return;
    const text = prompt.value;
    if (!text.trim()) { prompt.focus(); return; }
    if (!accept([{ role: 'user', content: text }])) return;
    prompt.value = '';
    showMessage('user', 'user', text, 'user-message');
    await answer();
  }

  // The tool results typed under the last answer's tool calls, sent back as
  // one `role: "tool"` message per call (after the assistant message that
  // carries the calls, already in the history), as the OpenAI API expects.
  async function sendToolResults(calls: ToolCall[], fields: HTMLTextAreaElement[]) {
    if (inflight) return;
    const empty = calls.findIndex((_, i) => !fields[i].value.trim());
    if (empty >= 0) {
      showError(`Tool result: enter a result for ${calls[empty].function.name} (${calls[empty].id}).`);
      fields[empty].focus();
      return;
    }
    const results: Message[] = calls.map((c, i) => ({ role: 'tool', tool_call_id: c.id, content: fields[i].value }));
    if (!accept(results)) return;
    calls.forEach((c, i) => showMessage('tool', `tool · ${c.function.name} (${c.id})`, fields[i].value, 'tool-message'));
    await answer();
  }

  function showError(text: string) { clear(pageStatus); pageStatus.appendChild(notice('error', text)); }

  // Adds `messages` to the conversation and makes the request body of it
  // (lastBody); false (the conversation unchanged, the error shown) when a
  // field does not parse.
  function accept(messages: Message[]): boolean {
    clear(pageStatus);
    history.push(...messages);
    let body: Record<string, unknown>;
    try {
      body = buildBody();
    } catch (e) {
      history.splice(history.length - messages.length);
      showError((e as Error).message);
      return false;
    }
    // Tool calls left unanswered by this turn stay so in the history.
    for (const form of log.querySelectorAll('.tool-results')) form.remove();
    lastBody = body;
    renderCode();
    return true;
  }

  // Streams the answer to the conversation as it stands (lastBody).
  async function answer() {
    const body = lastBody!;
    const view = new AnswerView();
    log.appendChild(view.el);
    inflight = new AbortController();
    sendButton.disabled = true;
    stopButton.disabled = false;
    view.el.setAttribute('aria-busy', 'true');
    const t0 = performance.now();
    let tFirst = 0;
    let usage: Usage | undefined;
    const calls: ToolCall[] = [];
    const first = () => { if (!tFirst) tFirst = performance.now(); };
    try {
      const r = await postStream('/v1/chat/completions', body, inflight.signal);
      if (body.stream) {
        let done = false;
        for await (const data of sseEvents(r.body!)) {
          if (data === '[DONE]') { done = true; break; }
          const ev = JSON.parse(data);
          if (ev.error) throw new Error(ev.error.message ?? 'the server reported an error');
          if (ev.usage) usage = ev.usage;
          const delta = ev.choices?.[0]?.delta;
          if (!delta) continue;
          if (delta.reasoning_content) { first(); view.addReasoning(delta.reasoning_content); }
          if (delta.content) { first(); view.addContent(delta.content); }
          for (const tc of delta.tool_calls ?? []) {
            first();
            const i = tc.index ?? 0;
            calls[i] ??= { id: tc.id, type: 'function', function: { name: '', arguments: '' } };
            if (tc.id) calls[i].id = tc.id;
            if (tc.function?.name) calls[i].function.name += tc.function.name;
            if (tc.function?.arguments) calls[i].function.arguments += tc.function.arguments;
            view.showTools(calls);
          }
        }
        if (!done) throw new StreamBroken('the stream ended before the answer was complete');
      } else {
        const res = await r.json();
        first();
        const msg = res.choices?.[0]?.message ?? {};
        if (msg.reasoning_content) view.addReasoning(msg.reasoning_content);
        if (msg.content) view.addContent(msg.content);
        if (msg.tool_calls) { calls.push(...msg.tool_calls); view.showTools(calls); }
        usage = res.usage;
      }
      const content = view.content.textContent ?? '';
      history.push({ role: 'assistant', content: content || null, ...(calls.length ? { tool_calls: calls } : {}) });
      showStats(view, usage, t0, tFirst, performance.now());
      if (calls.length) offerToolResults(view, calls);
      if (format.value !== 'text') showJson(view, content, format.value === 'json_schema' ? JSON.parse(schema.value) : null);
    } catch (e) {
      const err = e as Error;
      view.fail(err.name === 'AbortError' ? 'Stopped.' : `Error: ${err.message}`);
      showStats(view, usage, t0, tFirst, performance.now());
    } finally {
      view.el.removeAttribute('aria-busy');
      inflight = null;
      sendButton.disabled = false;
      stopButton.disabled = true;
    }
  }

  // Under an answer that called tools: a result field per call and a button
  // that sends them back. Removed when the conversation moves on.
  function offerToolResults(view: AnswerView, calls: ToolCall[]) {
    if (calls.some(c => !c.id)) {
      view.fail('The server gave a tool call no id: its result cannot be sent back.');
      return;
    }
    const fields = calls.map((c, i) => h('textarea', { id: `pg-tool-result-${i}`, rows: 2, spellcheck: 'false',
                                                       'data-tool-call-id': c.id!, placeholder: '{"temperature": 21}' }));
    const form = h('form', { class: 'tool-results', 'aria-label': 'Tool results' },
      h('h4', {}, 'Tool results'),
      ...calls.map((c, i) => field(`Result of ${c.function.name} (${c.id})`, fields[i])),
      h('button', { type: 'submit', id: 'pg-tool-send', class: 'primary' }, 'Send tool results'));
    form.addEventListener('submit', (ev) => { ev.preventDefault(); void sendToolResults(calls, fields); });
    view.el.appendChild(form);
  }

  function showStats(view: AnswerView, usage: Usage | undefined, t0: number, tFirst: number, tEnd: number) {
    const parts: string[] = [];
    if (usage) {
      parts.push(`prompt ${usage.prompt_tokens ?? '?'}`, `cached ${usage.prompt_tokens_details?.cached_tokens ?? 0}`,
                 `completion ${usage.completion_tokens ?? '?'}`);
    }
    if (tFirst) parts.push(`TTFT ${Math.round(tFirst - t0)} ms`);
    const n = usage?.completion_tokens ?? 0;
    if (tFirst && n > 1 && tEnd > tFirst) parts.push(`${((n - 1) / ((tEnd - tFirst) / 1000)).toFixed(1)} tok/s`);
    view.stats.textContent = parts.join(' · ');
    if (usage) {
      view.stats.dataset.promptTokens = String(usage.prompt_tokens ?? '');
      view.stats.dataset.completionTokens = String(usage.completion_tokens ?? '');
      view.stats.dataset.cachedTokens = String(usage.prompt_tokens_details?.cached_tokens ?? 0);
    }
  }

  function showJson(view: AnswerView, content: string, schemaValue: Record<string, unknown> | null) {
    view.json.hidden = false;
    let value: unknown;
    try {
      value = JSON.parse(content);
    } catch (e) {
      view.json.dataset.valid = 'false';
      view.json.appendChild(notice('error', `Not valid JSON: ${(e as Error).message}`));
      return;
    }
    const problems = schemaValue ? checkSchema(value, schemaValue) : [];
    view.json.dataset.valid = problems.length === 0 ? 'true' : 'false';
    append(view.json,
      problems.length === 0 ? notice('ok', schemaValue ? 'Valid JSON, matches the schema' : 'Valid JSON')
                            : notice('error', `JSON does not match the schema: ${problems.join('; ')}`),
      h('pre', { class: 'json', 'data-testid': 'json-value' }, JSON.stringify(value, null, 2)));
  }

  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); void send(); }
  });

  const settings = h('section', { class: 'panel settings', 'aria-labelledby': 'pg-settings-h' },
    h('h2', { id: 'pg-settings-h' }, 'Settings'),
    h('div', { class: 'row' }, field('Model', model), button('Refresh', () => void loadModels(), { id: 'pg-refresh' })),
    field('System prompt', system),
    h('div', { class: 'grid2' }, field('temperature', temperature), field('top_p', topP), field('max_tokens', maxTokens),
      field('seed', seed)),
    field('Stop strings', stop, 'one per line'),
    h('label', { class: 'check' }, stream, ' Stream'),
    field('Response format', format), schemaField,
    h('label', { class: 'check' }, useTools, ' Tools'), toolFields);
  const chat = h('section', { class: 'panel chat', 'aria-labelledby': 'pg-chat-h' },
    h('h2', { id: 'pg-chat-h' }, 'Chat'), pageStatus, log,
    h('div', { class: 'composer' }, prompt, h('div', { class: 'row' }, sendButton, stopButton, clearButton)));
  const codePanel = h('section', { class: 'panel code-panel', 'aria-labelledby': 'pg-code-h' },
    h('h2', { id: 'pg-code-h' }, 'Request as code'), h('div', { class: 'row' }, codeKind, copyButton), code);
  append(root, h('h1', { class: 'page-title' }, 'Playground'), h('div', { class: 'playground' }, settings, chat, codePanel));
  syncVisibility();
  renderCode();
  void loadModels();
  return () => inflight?.abort();
}
