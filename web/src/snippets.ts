// The playground's request as code to copy: curl, and the openai SDK in
// Python and JavaScript. The API key is never written into them: they read
// it from the environment ($PAGODA_API_KEY).

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function pyLiteral(v: unknown, indent = ''): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  const next = indent + '    ';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return `[\n${v.map(x => next + pyLiteral(x, next)).join(',\n')},\n${indent}]`;
  }
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return `{\n${entries.map(([k, x]) => `${next}${JSON.stringify(k)}: ${pyLiteral(x, next)}`).join(',\n')},\n${indent}}`;
}

export function curlSnippet(origin: string, body: Record<string, unknown>): string {
  return [
    `curl ${origin}/v1/chat/completions \\`,
    `  -H "Authorization: Bearer $PAGODA_API_KEY" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  ${body.stream ? '-N ' : ''}-d ${shellQuote(JSON.stringify(body, null, 2))}`,
  ].join('\n');
}

// Fields the SDKs take as named arguments; the rest go in extra_body.
const SDK_FIELDS = new Set(['model', 'messages', 'temperature', 'top_p', 'max_tokens', 'seed', 'stop', 'stream',
  'stream_options', 'response_format', 'tools', 'tool_choice', 'presence_penalty', 'frequency_penalty', 'n',
  'logprobs', 'top_logprobs']);

export function pythonSnippet(origin: string, body: Record<string, unknown>): string {
  const args: string[] = [];
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (SDK_FIELDS.has(k)) args.push(`    ${k}=${pyLiteral(v, '    ')},`);
    else extra[k] = v;
  }
  if (Object.keys(extra).length) args.push(`    extra_body=${pyLiteral(extra, '    ')},`);
  const out = ['import os', 'from openai import OpenAI', '',
    `client = OpenAI(base_url="${origin}/v1", api_key=os.environ.get("PAGODA_API_KEY", "none"))`, '',
    'response = client.chat.completions.create(', ...args, ')'];
  if (body.stream) {
    out.push('for chunk in response:', '    if chunk.choices and chunk.choices[0].delta.content:',
             '        print(chunk.choices[0].delta.content, end="", flush=True)');
  } else {
    out.push('print(response.choices[0].message.content)');
  }
  return out.join('\n');
}

export function jsSnippet(origin: string, body: Record<string, unknown>): string {
  const out = ["import OpenAI from 'openai';", '',
    `const client = new OpenAI({ baseURL: '${origin}/v1', apiKey: process.env.PAGODA_API_KEY ?? 'none' });`, '',
    `const response = await client.chat.completions.create(${JSON.stringify(body, null, 2)});`];
  if (body.stream) {
    out.push('for await (const chunk of response) {', "  process.stdout.write(chunk.choices[0]?.delta?.content ?? '');", '}');
  } else {
    out.push('console.log(response.choices[0].message.content);');
  }
  return out.join('\n');
}
