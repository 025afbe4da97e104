// Writes reference token ids from @lenml/tokenizers (transformers.js) for a
// BERT-family (WordPiece) tokenizer.json, over the corpus of corpus.js plus
// BERT-specific cases: {"cat", "text", "ids"} per line.
//
//   node wordpiece_reference.js TOKENIZER_JSON OUT.jsonl
//
// No npm package ships a BERT tokenizer.json, so the caller
// (tests/tokenizer/wpm_golden.cc) writes one from the vocabulary of a GGUF
// file in the layout of bge-small-en-v1.5's tokenizer.json (BertNormalizer
// with lowercasing, BertPreTokenizer, WordPiece with "##" continuations and
// "[UNK]"). What is checked is the algorithm: transformers.js's BertNormalizer
// (with the two corrections below), BertPreTokenizer and WordPiece against
// pagoda's WPM tokenizer.
"use strict";
const fs = require("fs");
const { WriteJsonLines } = require("./jsonl");
const { TokenizerLoader } = require("@lenml/tokenizers");
const { Generate } = require("./corpus");

// Cases the general corpus lacks: accents (stripped when lowercasing),
// control and zero-width characters (removed by clean_text), CJK ideographs
// (split one by one), long words (over max_input_chars_per_word -> [UNK]),
// words with no WordPiece cover, special-token text.
const BERT_CASES = [
  "Héllo Wörld", "ÀÉÎÕÜ àéîõü Ççñ", "naïve café", "STRASSE straße", "İstanbul ıi",
  "a\u0000b\u0007c", "zero\u200bwidth\u200cjoiner\u200d", "tab\tnew\nline\r\nend", "\u00a0nbsp\u3000ideo",
  "中文分词测试", "日本語のテキスト", "한국어 텍스트", "漢字かなカナ混じり文", "𠀀𪜀 ext-B",
  "x".repeat(99), "y".repeat(100), "z".repeat(101), "supercalifragilistic".repeat(6),
  "ʘʘʘ ꙮꙮ ⅋⅋", "qzxqzxqzx", "[CLS] hello [SEP]", "[MASK] is [UNK] and [PAD]", "[cls] lower",
  "don't stop-me now!", "e-mail: a.b@c.d, http://x.y/z?q=1&r=2", "3.14159 1,000,000 $5.00 50%",
  "", " ", "   leading and trailing   ", "punct!?.,;:", "¿Qué? ¡Sí!", "«quotes» „low“",
];

// Two places where transformers.js's BertNormalizer departs from the Rust
// `tokenizers` crate that runs a tokenizer.json (normalizers/bert.rs) and from
// Python's BertTokenizer:
//  - `_tokenize_chinese_chars` walks UTF-16 code units, so the CJK
//    ideographs outside the BMP (Extension B and later: U+20000...) are never
//    split off as words of their own;
//  - `_is_control` tests Cc, Cf, Co and Cs but not Cn, so unassigned code
//    points survive clean_text (the Rust crate's `is_other()` removes them).
// The reference follows the Rust definitions here, replacing those two
// methods on the tokenizer's normalizer; each line also carries the stock
// transformers.js ids ("stock_ids") and whether the text holds such a code
// point ("js_divergence"), so the test can check that the stock ids differ
// only there.
const RUST_CJK = [[0x4e00, 0x9fff], [0x3400, 0x4dbf], [0x20000, 0x2a6df], [0x2a700, 0x2b73f], [0x2b740, 0x2b81f],
                  [0x2b920, 0x2ceaf], [0xf900, 0xfaff], [0x2f800, 0x2fa1f]];
const isCjk = (cp) => RUST_CJK.some(([lo, hi]) => cp >= lo && cp <= hi);
const hasJsDivergence = (text) => [...text].some((c) => (c.codePointAt(0) > 0xffff && isCjk(c.codePointAt(0))) ||
                                                       /\p{Cn}/u.test(c));

function FollowRustBertNormalizer(normalizer) {
  normalizer._tokenize_chinese_chars = (text) => {
    let out = "";
    for (const c of text) out += isCjk(c.codePointAt(0)) ? ` ${c} ` : c;
    return out;
  };
  normalizer._is_control = (c) => c !== "\t" && c !== "\n" && c !== "\r" && /^\p{C}$/u.test(c);
}

function Main(argv) {
  if (argv.length !== 2) {
    process.stderr.write("usage: node wordpiece_reference.js TOKENIZER_JSON OUT.jsonl\n");
    return 2;
  }
  const [json, out] = argv;
  const load = () => TokenizerLoader.fromPreTrained({
    tokenizerJSON: JSON.parse(fs.readFileSync(json, "utf8")),
    tokenizerConfig: {
      tokenizer_class: "BertTokenizer", do_lower_case: true, model_max_length: 512,
      cls_token: "[CLS]", sep_token: "[SEP]", unk_token: "[UNK]", pad_token: "[PAD]", mask_token: "[MASK]",
    },
  });
  const stock = load();
  const tokenizer = load();
  if (tokenizer.normalizer?.constructor?.name !== "BertNormalizer") {
    process.stderr.write(`expected a BertNormalizer, got ${tokenizer.normalizer?.constructor?.name}\n`);
    return 1;
  }
  FollowRustBertNormalizer(tokenizer.normalizer);
  const lines = [];
  const seed = process.env.PAGODA_CORPUS_SEED ? Number(process.env.PAGODA_CORPUS_SEED) : undefined;
  const cases = [...Generate(seed), ...BERT_CASES.map((text) => ({ cat: "bert", text }))];
  for (const { cat, text } of cases) {
    const opts = { add_special_tokens: false };
    lines.push(JSON.stringify({ cat, text, ids: tokenizer.encode(text, opts), stock_ids: stock.encode(text, opts),
                                js_divergence: hasJsDivergence(text) }));
  }
  WriteJsonLines(out, lines);
  return 0;
}

process.exitCode = Main(process.argv.slice(2));
