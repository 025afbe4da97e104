// Deterministic tokenizer test corpus: >= 2,000 varied strings (English, code,
// Korean, Japanese, Chinese, emoji, whitespace runs, digits, punctuation,
// special-token text, other scripts). Same seed -> same corpus, byte for byte.
//
// Left out on purpose: U+0085 (NEL). JavaScript's \s lacks it, while Unicode
// White_Space, Oniguruma (the Rust tokenizers) and PCRE2 include it, so
// transformers.js splits " \u0085 " differently from the real HF tokenizer.
//
// Every string is NFC except the "nfd" category, which exists to catch
// tokenizers that skip their normalizer (Qwen3's tokenizer.json applies NFC).
"use strict";

// mulberry32: small, well-distributed, reproducible across Node versions.
function Rng(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));  // inclusive
  const pick = (arr) => arr[int(0, arr.length - 1)];
  const chance = (p) => next() < p;
  return { next, int, pick, chance };
}

const WORDS = (
  "the of and to in is was for on that with as by at from his her it an were are which this be " +
  "or has had not but what all when can there been one would will their if more so some time " +
  "people year way day man thing woman life child world school state family student group country " +
  "problem hand part place case week company system program question work government number night " +
  "point home water room mother area money story fact month lot right study book eye job word " +
  "business issue side kind head house service friend father power hour game line end member law " +
  "car city community name president team minute idea kid body information back parent face others " +
  "level office door health person art war history party result change morning reason research girl " +
  "guy moment air teacher force education tokenizer inference engine quantization attention " +
  "transformer embedding gradient throughput latency Pagoda llama Qwen DeepSeek Gemma GPU CPU " +
  "antidisestablishmentarianism supercalifragilisticexpialidocious pneumonoultramicroscopic " +
  "naïve café résumé coöperate façade jalapeño Zürich Øresund Ångström São Paulo Kraków"
).split(" ");

const CONTRACTIONS = [
  "don't", "can't", "won't", "it's", "I'm", "you're", "they've", "we'll", "she'd", "I'M", "YOU'RE",
  "They'LL", "HE'D", "it'S", "we'Ve", "ma'am", "o'clock", "rock 'n' roll", "'s", "'t", "'re", "'ve",
  "'m", "'ll", "'d", "''", "'tis", "y'all", "’s", "don’t", "L'amour", "l'été", "aujourd'hui",
];

const PUNCT = [
  ".", ",", "!", "?", ";", ":", "...", "!!!", "?!", "—", "–", "-", "--", "…", "(", ")", "[", "]",
  "{", "}", "\"", "'", "“", "”", "‘", "’", "«", "»", "„", "/", "\\", "|", "@", "#", "$", "%", "^",
  "&", "*", "_", "+", "=", "~", "`", "<", ">", "<<", ">>", "->", "=>", "::", "§", "¶", "•", "†",
  "‰", "€", "£", "¥", "¢", "°", "±", "×", "÷", "©", "®", "™", "¿", "¡", "、", "。", "！", "？",
  "「", "」", "『", "』", "（", "）", "【", "】", "〜", "・", "：", "；", "，",
];

const KOREAN = [
  "안녕하세요", "감사합니다", "대한민국", "서울특별시", "토크나이저", "인공지능", "언어 모델", "오늘 날씨가 좋네요",
  "저는 학생입니다", "한국어 처리", "빠른 갈색 여우가 게으른 개를 뛰어넘는다", "밥 먹었어요?", "사랑해요",
  "프로그래밍", "데이터베이스", "컴퓨터 과학", "ㅋㅋㅋ", "ㅎㅎ", "ㅠㅠ", "가나다라마바사", "훈민정음",
  "똠방각하", "뷁", "읽었습니다", "됐어", "괜찮아요", "서버가 응답하지 않습니다", "2024년 3월 15일",
];

const JAPANESE = [
  "こんにちは", "ありがとうございます", "日本語", "東京都", "トークナイザー", "人工知能", "今日はいい天気ですね",
  "私は学生です", "カタカナ", "ひらがな", "漢字かな交じり文", "吾輩は猫である。名前はまだ無い。",
  "コンピューター", "プログラミング言語", "ｶﾀｶﾅ", "ｱｲｳｴｵ", "ー", "っ", "ゃゅょ", "〜です", "ヴァイオリン",
  "すもももももももものうち", "東京スカイツリー", "令和", "㍻", "お疲れ様でした！", "「はい」と言った。",
];

const CHINESE = [
  "你好", "谢谢", "中华人民共和国", "北京", "分词器", "人工智能", "今天天气很好", "我是学生", "繁體中文",
  "简体中文", "机器学习", "深度学习模型", "自然语言处理", "龍", "龘", "𠀀", "𪚥", "一二三四五六七八九十",
  "百分之九十九", "你吃饭了吗？", "我爱北京天安门。", "学而时习之，不亦说乎？", "香港", "臺灣", "程序员",
  "推理引擎", "量化", "注意力机制",
];

const OTHER_SCRIPTS = [
  "Привет, мир!", "Съешь же ещё этих мягких французских булок", "Γειά σου Κόσμε", "ΑΒΓΔ αβγδ",
  "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "हिन्दी", "สวัสดีครับ", "ภาษาไทย", "Xin chào thế giới",
  "Tiếng Việt", "Ελληνικά", "Türkçe çok güzel", "Español: ¿Qué tal?", "Français: où est la gare ?",
  "Deutsch: Straße, Größe, Übermaß", "Polski: zażółć gęślą jaźń", "Íslenska: þetta er", "ქართული",
  "Հայերեն", "አማርኛ", "తెలుగు", "தமிழ்", "বাংলা", "ਪੰਜਾਬੀ", "ગુજરાતી", "ಕನ್ನಡ", "മലയാളം", "සිංහල",
  "ខ្មែរ", "ລາວ", "မြန်မာ", "བོད་ཡིག", "ᠮᠣᠩᠭᠣᠯ", "ᐃᓄᒃᑎᑐᑦ", "Ⲙⲉⲧⲣⲉⲙⲛ̀ⲭⲏⲙⲓ",
];

const EMOJI = [
  "😀", "😂", "🤣", "❤️", "❤", "👍", "👍🏻", "👍🏽", "👍🏿", "🙏🏾", "🔥", "✨", "🎉", "🚀", "💯", "🤖",
  "👨‍👩‍👧‍👦", "👩‍💻", "👩🏽‍💻", "🧑🏿‍🚀", "👨‍❤️‍👨", "🏳️‍🌈", "🏴‍☠️", "🐻‍❄️", "😶‍🌫️", "❤️‍🔥",
  "🇰🇷", "🇯🇵", "🇨🇳", "🇺🇸", "🇩🇪", "🇧🇷", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "*️⃣", "©️", "™️", "☺️", "✌🏼",
  "🫠", "🫶🏻", "🦀", "🐍", "☕", "🍣", "🍜", "🥟", "🧋", "🀄", "🂡", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝐁𝐨𝐥𝐝", "ℌ𝔢𝔩𝔩𝔬",
];

const SPECIAL_TEXT = [
  "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
  "<|reserved_special_token_5|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
  "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|vision_pad|>",
  "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<|EOT|>",
  "<｜tool▁calls▁begin｜>", "<｜tool▁sep｜>", "<｜place▁holder▁no▁7｜>", "<bos>", "<eos>", "<pad>",
  "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<unused0>", "<unused42>",
  "[multimodal]", "<table>", "</table>", "<tr>", "<td>", "<h1>", "<0x41>", "<0x0A>", "<|", "|>",
  "<|im_start", "im_end|>", "<｜", "▁", "▁▁", "Ġ", "ĠĠ", "Ċ",
];

const CODE = [
  "#include <stdio.h>\n\nint main(void) {\n    printf(\"Hello, world!\\n\");\n    return 0;\n}\n",
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
  "for (let i = 0; i < arr.length; ++i) {\n\tconsole.log(`item ${i}: ${arr[i]}`);\n}",
  "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}",
  "SELECT id, name, COUNT(*) AS n\nFROM users u\nJOIN orders o ON o.user_id = u.id\nWHERE u.created_at >= '2024-01-01'\nGROUP BY id, name\nHAVING n > 3;",
  "<div class=\"container\">\n  <p id='x'>Hello &amp; welcome</p>\n</div>",
  "{\"key\": \"value\", \"list\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
  "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do\n  echo \"$f\" | tr '[:lower:]' '[:upper:]'\ndone",
  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
  "template <typename T>\nstd::vector<T> Filter(const std::vector<T>& v, auto&& pred) {\n  std::vector<T> out;\n  std::copy_if(v.begin(), v.end(), std::back_inserter(out), pred);\n  return out;\n}",
  "class Foo:\n\t\"\"\"Docstring.\"\"\"\n\n\tdef __init__(self, x: int = 0) -> None:\n\t\tself._x = x  # comment\n",
  "x = [i**2 for i in range(100) if i % 3 == 0]",
  "if (a && !b || c != d) { return a >= b ? a <<= 2 : b >>>= 1; }",
  "    \n    \n\tindented();\n\t\t\tdeep();\r\n",
  "const re = /^[a-z0-9_\\-]+@[a-z]+\\.[a-z]{2,}$/i;",
  "print(f\"{value:>10.3f} | {name!r:<20}\")",
  "// TODO(someone): fix this\n/* block\n * comment */\nint x = 0x7FFFFFFF; double y = 1.5e-10;",
  "diff --git a/x b/x\n@@ -1,3 +1,4 @@\n-old line\n+new line\n context",
  "```python\nimport numpy as np\nnp.zeros((3, 4), dtype=np.float32)\n```",
  "    return self.weight @ x.T + self.bias[:, None]",
];

const WHITESPACE_UNITS = [" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\t\t", " \n", "\n ", "\u00a0", "\u3000", "\u2009", "\u202f", "\r", "\v", "\f"];

function Sentence(r) {
  const n = r.int(3, 18);
  const parts = [];
  for (let i = 0; i < n; i++) {
    let w = r.chance(0.12) ? r.pick(CONTRACTIONS) : r.pick(WORDS);
    if (i === 0 || r.chance(0.08)) w = w.charAt(0).toUpperCase() + w.slice(1);
    if (r.chance(0.04)) w = w.toUpperCase();
    parts.push(w);
    if (r.chance(0.1)) parts.push(r.pick([",", ";", ":", " -", " (" + r.pick(WORDS) + ")"]));
  }
  return parts.join(" ").replace(/ ([,;:])/g, "$1") + r.pick([".", ".", ".", "!", "?", "...", "?!", ""]);
}

function Number_(r) {
  const kind = r.int(0, 11);
  const digits = (n) => { let s = String(r.int(1, 9)); for (let i = 1; i < n; i++) s += r.int(0, 9); return s; };
  switch (kind) {
    case 0: return digits(r.int(1, 4));
    case 1: return digits(r.int(5, 12));
    case 2: return digits(r.int(13, 40));
    case 3: return digits(r.int(1, 3)) + "." + digits(r.int(1, 6));
    case 4: return digits(r.int(4, 10)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    case 5: return `${r.int(1990, 2030)}-${String(r.int(1, 12)).padStart(2, "0")}-${String(r.int(1, 28)).padStart(2, "0")}`;
    case 6: return `+1 (${digits(3)}) ${digits(3)}-${digits(4)}`;
    case 7: return "0x" + r.int(0, 0xffffff).toString(16).toUpperCase();
    case 8: return "-" + digits(r.int(1, 6)) + "e" + r.pick(["-", "+", ""]) + r.int(1, 30);
    case 9: return r.pick(["１２３４５", "٣٤٥", "४५६", "²³", "½", "Ⅻ", "⑩", "〇一二", "৩৪"]);
    case 10: return "000" + digits(r.int(1, 7));
    default: return `${r.int(0, 255)}.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(0, 255)}`;
  }
}

function Whitespace(r) {
  let s = "";
  const n = r.int(1, 6);
  for (let i = 0; i < n; i++) s += r.pick(WHITESPACE_UNITS).repeat(r.chance(0.3) ? r.int(2, 20) : 1);
  return s;
}

function Mixed(r, special) {
  const gens = [
    () => Sentence(r), () => r.pick(KOREAN), () => r.pick(JAPANESE), () => r.pick(CHINESE),
    () => r.pick(EMOJI), () => Number_(r), () => r.pick(PUNCT), () => r.pick(OTHER_SCRIPTS),
    () => r.pick(CONTRACTIONS), () => r.pick(WORDS),
  ];
  if (special) gens.push(() => r.pick(SPECIAL_TEXT), () => r.pick(SPECIAL_TEXT));
  const n = r.int(2, 8);
  let s = "";
  for (let i = 0; i < n; i++) {
    s += r.pick(gens)();
    s += r.chance(0.6) ? " " : r.chance(0.5) ? "" : Whitespace(r);
  }
  return r.chance(0.5) ? s.trimEnd() : s;
}

function RandomCodePoints(r) {
  // Assigned, non-surrogate ranges only, so both sides agree on the characters.
  const ranges = [[0x20, 0x7e], [0xa1, 0x17f], [0x370, 0x3ff], [0x400, 0x4ff], [0x5d0, 0x5ea],
    [0x620, 0x64a], [0x905, 0x939], [0xe01, 0xe3a], [0x3041, 0x3096], [0x30a1, 0x30fa],
    [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0x1f600, 0x1f64f], [0x2190, 0x21ff], [0x2500, 0x257f],
    [0x300, 0x36f], [0x2000, 0x200a], [0x2010, 0x2027], [0x3000, 0x303f], [0xff01, 0xff5e],
    [0x1100, 0x1112], [0x9, 0xd], [0x20, 0x2f], [0x30, 0x39], [0x660, 0x669], [0xff61, 0xff9f]];
  const n = r.int(1, 40);
  let s = "";
  for (let i = 0; i < n; i++) {
    const [lo, hi] = r.pick(ranges);
    s += String.fromCodePoint(r.int(lo, hi));
  }
  return s;
}

// Short strings over a small ASCII alphabet that exercises the pre-tokenizer
// regexes: contractions, digit runs, punctuation next to letters, space runs.
function AsciiSoup(r) {
  const units = ["a", "b", "Z", "'", "'s", "'LL", "'d", " ", "  ", "\t", "\n", "\r\n", "1", "22", "3333",
    ".", ",", "!", "?", "-", "_", "(", ")", "/", "\"", "#", "$", "=", ">", "<", "|", "~", "`", "é", "中", "😀"];
  let s = "";
  const n = r.int(1, 16);
  for (let i = 0; i < n; i++) s += r.pick(units);
  return s;
}

function Generate(seed = 20240601) {
  const r = Rng(seed);
  const out = [];
  const seen = new Set();
  const add = (cat, text) => {
    if (cat !== "nfd") text = text.normalize("NFC");
    if (seen.has(text)) return;
    seen.add(text);
    out.push({ cat, text });
  };

  // Fixed cases first: every list entry alone, so each is covered at least once.
  for (const x of WORDS) add("english", x);
  for (const x of CONTRACTIONS) add("english", x);
  for (const x of PUNCT) add("punct", x);
  for (const x of KOREAN) add("korean", x);
  for (const x of JAPANESE) add("japanese", x);
  for (const x of CHINESE) add("chinese", x);
  for (const x of OTHER_SCRIPTS) add("scripts", x);
  for (const x of EMOJI) add("emoji", x);
  for (const x of SPECIAL_TEXT) add("special", x);
  for (const x of CODE) add("code", x);
  for (const x of WHITESPACE_UNITS) add("whitespace", x);
  for (const x of ["", " ", "a", " a", "a ", "  a  ", "\n", "\n\n\n\n\n", " ".repeat(40), "\t".repeat(33),
    "\n".repeat(45), " \t \n \r\n ", "x\u00a0y", "1", "12", "123", "1234", "12345678901234567890",
    "I", "Hello", " Hello", "hello world", "Hello World!", "HELLO", "\u0000", "\u0007", "\u001b[31mred\u001b[0m",
    "\ufffd", "\u200b", "a\u200db", "a\ufeffb", "a\u2028b", "\u00a0\u00a0a", "a \u3000 b", "\u00ad", "ﬁ", "Å", "ẞ", "ǅ", "İstanbul", "ı", "ς", "ﬀ"]) add("edge", x);

  const plan = [
    ["english", 320, () => r.chance(0.3) ? Sentence(r) + " " + Sentence(r) : Sentence(r)],
    ["code", 180, () => {
      let s = r.pick(CODE);
      if (r.chance(0.5)) s = s.replace(/\n/g, "\n" + r.pick(["", "  ", "    ", "\t", "\t\t"]));
      if (r.chance(0.3)) s = r.pick(["  ", "\t", "\n"]) + s;
      return s;
    }],
    ["korean", 110, () => Array.from({ length: r.int(1, 5) }, () => r.pick(KOREAN)).join(r.pick([" ", ", ", ". ", "\n", ""]))],
    ["japanese", 110, () => Array.from({ length: r.int(1, 5) }, () => r.pick(JAPANESE)).join(r.pick(["", "、", "。", " ", "\n"]))],
    ["chinese", 110, () => Array.from({ length: r.int(1, 5) }, () => r.pick(CHINESE)).join(r.pick(["", "，", "。", " ", "\n"]))],
    ["emoji", 110, () => Array.from({ length: r.int(1, 6) }, () => r.pick(EMOJI)).join(r.pick(["", " ", "", "!"])) + (r.chance(0.4) ? " " + Sentence(r) : "")],
    ["whitespace", 150, () => {
      const w = () => Whitespace(r);
      const k = r.int(0, 4);
      if (k === 0) return w();
      if (k === 1) return w() + r.pick(WORDS) + w();
      if (k === 2) return r.pick(WORDS) + w() + r.pick(WORDS);
      if (k === 3) return w() + Sentence(r);
      return Sentence(r) + w();
    }],
    ["digits", 150, () => {
      const k = r.int(0, 3);
      if (k === 0) return Number_(r);
      if (k === 1) return `${r.pick(WORDS)} ${Number_(r)} ${r.pick(WORDS)}`;
      if (k === 2) return `${Number_(r)}${r.pick(["", " ", "%", "km", "개", "円", "元", "$"])}`;
      return Array.from({ length: r.int(2, 6) }, () => Number_(r)).join(r.pick([" ", ",", ", ", "+", "\n"]));
    }],
    ["punct", 90, () => Array.from({ length: r.int(1, 8) }, () => r.pick(PUNCT)).join(r.chance(0.5) ? "" : " ") + (r.chance(0.5) ? r.pick(WORDS) : "")],
    ["scripts", 80, () => Array.from({ length: r.int(1, 3) }, () => r.pick(OTHER_SCRIPTS)).join(" ")],
    ["mixed", 260, () => Mixed(r, false)],
    ["special", 220, () => Mixed(r, true)],
    ["random", 200, () => RandomCodePoints(r)],
    ["ascii", 200, () => AsciiSoup(r)],
    ["long", 25, () => Array.from({ length: r.int(10, 40) }, () => Mixed(r, r.chance(0.3))).join(r.pick([" ", "\n", "\n\n"]))],
    ["nfd", 30, () => (r.chance(0.5) ? r.pick(KOREAN) : r.pick(["café", "naïve", "Ångström", "Tiếng Việt", "résumé", "Zürich", "é", "ñ", "ガ", "パ"])).normalize("NFD")],
  ];
  for (const [cat, count, gen] of plan) {
    for (let i = 0; i < count; i++) add(cat, gen());
  }
  return out;
}

module.exports = { Generate };

if (require.main === module) {
  for (const e of Generate()) process.stdout.write(JSON.stringify(e) + "\n");
}
