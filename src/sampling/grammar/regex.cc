#include "sampling/grammar/regex.h"

#include <vector>

#include "sampling/grammar/regex_charset.h"

namespace pagoda::grammar {

namespace {

constexpr int kMaxGroupDepth = 100;

struct Node {
  enum class Kind { kEmpty, kSet, kConcat, kAlt, kRepeat, kBegin, kEnd };
  Kind kind = Kind::kEmpty;
  CodePointSet set;        // kSet
  std::vector<Node> kids;  // kConcat, kAlt, kRepeat (one)
  int min = 0;             // kRepeat
  int max = -1;            // kRepeat; -1: unbounded
};

Node SetNode(CodePointSet s) {
  Node n;
  n.kind = Node::Kind::kSet;
  n.set = std::move(s);
  return n;
}

CodePointSet Digits() { return CodePointSet::Range('0', '9'); }

CodePointSet WordChars() {
  CodePointSet s = CodePointSet::Range('a', 'z');
  s.Add('A', 'Z');
  s.Add('0', '9');
  s.Add('_', '_');
  return s;
}

// JavaScript's \s: WhiteSpace and LineTerminator.
CodePointSet Spaces() {
  CodePointSet s = CodePointSet::Range('\t', '\r');
  for (char32_t c : {U' ', U'\u00A0', U'\u1680', U'\u2028', U'\u2029', U'\u202F', U'\u205F',
                     U'\u3000', U'\uFEFF'}) {
    s.Add(c, c);
  }
  s.Add(0x2000, 0x200A);
  return s;
}

CodePointSet LineTerminators() {
  CodePointSet s = CodePointSet::Of('\n');
  s.Add('\r', '\r');
  s.Add(0x2028, 0x2029);
  return s;
}

std::string Printable(char32_t c) {
  std::string s;
  AppendCodePointUtf8(c, &s);
  return s;
}

class Parser {
 public:
  explicit Parser(std::u32string text) : s_(std::move(text)) {}

  Result<Node> ParseAll() {
    auto node = ParseAlt(0);
    if (!node.ok()) return node.status();
    if (pos_ < s_.size()) return Error("unmatched ')'");
    return node;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument("regex: " + what + " at offset " + std::to_string(pos_));
  }
  bool Eof() const { return pos_ >= s_.size(); }
  char32_t Peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : 0; }

  Result<Node> ParseAlt(int depth) {
    Node alt;
    alt.kind = Node::Kind::kAlt;
    while (true) {
      auto seq = ParseConcat(depth);
      if (!seq.ok()) return seq.status();
      alt.kids.push_back(std::move(*seq));
      if (Eof() || Peek() != '|') break;
      ++pos_;
    }
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  Result<Node> ParseConcat(int depth) {
    Node seq;
    seq.kind = Node::Kind::kConcat;
    while (!Eof() && Peek() != '|' && Peek() != ')') {
      auto atom = ParseAtom(depth);
      if (!atom.ok()) return atom.status();
      Node node = std::move(*atom);
      auto quantified = ParseQuantifier(std::move(node));
      if (!quantified.ok()) return quantified.status();
      seq.kids.push_back(std::move(*quantified));
    }
    if (seq.kids.empty()) return Node{};
    if (seq.kids.size() == 1) return std::move(seq.kids[0]);
    return seq;
  }

  // Parses digits; false if none.
  bool ParseInt(int* out) {
    size_t start = pos_;
    long long v = 0;
    while (!Eof() && Peek() >= '0' && Peek() <= '9') {
      v = v * 10 + (Peek() - '0');
      if (v > 1'000'000'000) v = 1'000'000'000;
      ++pos_;
    }
    *out = static_cast<int>(v);
    return pos_ > start;
  }

  Result<Node> ParseQuantifier(Node atom) {
    if (Eof()) return atom;
    int min = 0, max = -1;
    const char32_t c = Peek();
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      min = 1;
      ++pos_;
    } else if (c == '?') {
      max = 1;
      ++pos_;
    } else if (c == '{') {
      const size_t start = pos_;
      ++pos_;
      if (!ParseInt(&min)) {
        pos_ = start;
        return Error("lone '{' (write \\{ for a literal brace)");
      }
      max = min;
      if (Peek() == ',') {
        ++pos_;
        max = -1;
        if (Peek() != '}' && !ParseInt(&max)) return Error("malformed {m,n} quantifier");
      }
      if (Peek() != '}') return Error("malformed {m,n} quantifier");
      ++pos_;
      if (max != -1 && min > max) return Error("quantifier {m,n} with m > n");
      if (min > kMaxRegexRepeat || max > kMaxRegexRepeat) {
        return Error("repetition bound above " + std::to_string(kMaxRegexRepeat));
      }
    } else {
      return atom;
    }
    if (atom.kind == Node::Kind::kBegin || atom.kind == Node::Kind::kEnd) {
      return Error("quantifier after an anchor");
    }
    if (!Eof() && Peek() == '?') ++pos_;  // lazy: the same set of full matches
    if (!Eof() && (Peek() == '+')) return Error("possessive quantifier");
    if (!Eof() && (Peek() == '*' || Peek() == '?' || Peek() == '{')) {
      return Error("nothing to repeat (quantifier after a quantifier)");
    }
    Node rep;
    rep.kind = Node::Kind::kRepeat;
    rep.min = min;
    rep.max = max;
    rep.kids.push_back(std::move(atom));
    return rep;
  }

  Result<Node> ParseAtom(int depth) {
    const char32_t c = Peek();
    switch (c) {
      case '(': return ParseGroup(depth);
      case '[': return ParseClass();
      case '.':
        ++pos_;
        return SetNode(LineTerminators().Complement());
      case '^': {
        ++pos_;
        Node n;
        n.kind = Node::Kind::kBegin;
        return n;
      }
      case '$': {
        ++pos_;
        Node n;
        n.kind = Node::Kind::kEnd;
        return n;
      }
      case '\\': {
        ++pos_;
        auto set = ParseEscape(false);
        if (!set.ok()) return set.status();
        return SetNode(std::move(*set));
      }
      case '*': case '+': case '?': case '{':
        return Error("nothing to repeat before '" + Printable(c) + "'");
      case ']': case '}':
        return Error("unescaped '" + Printable(c) + "'");
      default:
        ++pos_;
        return SetNode(CodePointSet::Of(c));
    }
  }

  Result<Node> ParseGroup(int depth) {
    if (depth >= kMaxGroupDepth) return Error("groups nested too deeply");
    ++pos_;  // '('
    if (Peek() == '?') {
      const char32_t k = Peek(1);
      if (k == ':') {
        pos_ += 2;
      } else if (k == '=' || k == '!') {
        return Error("lookahead (?" + Printable(k) + " is not supported");
      } else if (k == '<' && (Peek(2) == '=' || Peek(2) == '!')) {
        return Error("lookbehind (?<" + Printable(Peek(2)) + " is not supported");
      } else if (k == '<') {
        pos_ += 2;
        while (!Eof() && Peek() != '>') ++pos_;
        if (Eof()) return Error("unterminated group name");
        ++pos_;
      } else {
        return Error("group construct (?" + Printable(k) + " (inline flags, ...) is not supported");
      }
    }
    auto inner = ParseAlt(depth + 1);
    if (!inner.ok()) return inner.status();
    if (Eof() || Peek() != ')') return Error("missing ')'");
    ++pos_;
    return inner;
  }

  Result<CodePointSet> ParseClassAtom(bool* single) {
    *single = false;
    if (Eof()) return Error("unterminated character class");
    const char32_t c = Peek();
    ++pos_;
    if (c == '\\') {
      const char32_t e = Peek();
      auto set = ParseEscape(true);
      if (!set.ok()) return set.status();
      *single = !(e == 'd' || e == 'D' || e == 'w' || e == 'W' || e == 's' || e == 'S');
      return set;
    }
    *single = true;
    return CodePointSet::Of(c);
  }

  Result<Node> ParseClass() {
    ++pos_;  // '['
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    CodePointSet set;
    while (true) {
      if (Eof()) return Error("unterminated character class");
      if (Peek() == ']') {
        ++pos_;
        break;
      }
      bool single = false;
      auto lo = ParseClassAtom(&single);
      if (!lo.ok()) return lo.status();
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != 0) {
        ++pos_;
        bool single_hi = false;
        auto hi = ParseClassAtom(&single_hi);
        if (!hi.ok()) return hi.status();
        if (!single || !single_hi) return Error("class escape used as a range bound");
        const char32_t a = lo->ranges()[0].lo, b = hi->ranges()[0].lo;
        if (a > b) return Error("character range out of order");
        set.Add(a, b);
      } else {
        set.Add(*lo);
      }
    }
    if (negated) set = set.Complement();
    if (set.empty()) return Error("character class matches nothing");
    return SetNode(std::move(set));
  }

  Result<char32_t> ParseHex(int digits) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char32_t h = Peek();
      int d;
      if (h >= '0' && h <= '9') d = h - '0';
      else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
      else return Error("malformed hex escape");
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  // After the backslash. Returns the matched set.
  Result<CodePointSet> ParseEscape(bool in_class) {
    if (Eof()) return Error("pattern ends with a backslash");
    const char32_t e = Peek();
    ++pos_;
    switch (e) {
      case 'd': return Digits();
      case 'D': return Digits().Complement();
      case 'w': return WordChars();
      case 'W': return WordChars().Complement();
      case 's': return Spaces();
      case 'S': return Spaces().Complement();
      case 't': return CodePointSet::Of('\t');
      case 'n': return CodePointSet::Of('\n');
      case 'r': return CodePointSet::Of('\r');
      case 'f': return CodePointSet::Of('\f');
      case 'v': return CodePointSet::Of('\v');
      case '0':
        if (Peek() >= '0' && Peek() <= '9') return Error("octal escape is not supported");
        return CodePointSet::Of(0);
      case 'b':
        if (in_class) return CodePointSet::Of('\b');
        return Error("word boundary \\b is not supported");
      case 'B': return Error("\\B is not supported");
      case 'k': return Error("named backreference \\k is not supported");
      case 'p': case 'P': return Error("Unicode property escape \\" + Printable(e) + " is not supported");
      case 'c': return Error("control escape \\c is not supported");
      case 'x': {
        auto v = ParseHex(2);
        if (!v.ok()) return v.status();
        return CodePointSet::Of(*v);
      }
      case 'u': {
        char32_t v;
        if (Peek() == '{') {
          ++pos_;
          v = 0;
          int n = 0;
          while (!Eof() && Peek() != '}') {
            auto d = ParseHex(1);
            if (!d.ok()) return d.status();
            v = v * 16 + *d;
            if (++n > 6) return Error("malformed \\u{...} escape");
          }
          if (Eof() || n == 0) return Error("malformed \\u{...} escape");
          ++pos_;
        } else {
          auto h = ParseHex(4);
          if (!h.ok()) return h.status();
          v = *h;
        }
        if (v > CodePointSet::kMaxCodePoint || (v >= 0xD800 && v <= 0xDFFF)) {
          return Error("escape is not a Unicode scalar value (surrogates are not supported)");
        }
        return CodePointSet::Of(v);
      }
      default: break;
    }
    if (e >= '1' && e <= '9') return Error("backreference \\" + Printable(e) + " is not supported");
    static constexpr std::u32string_view kSyntax = U"^$\\.*+?()[]{}|/-";
    if (kSyntax.find(e) != std::u32string_view::npos) return CodePointSet::Of(e);
    return Error("unsupported escape \\" + Printable(e));
  }

  std::u32string s_;
  size_t pos_ = 0;
};

bool ContainsAnchor(const Node& n) {
  if (n.kind == Node::Kind::kBegin || n.kind == Node::Kind::kEnd) return true;
  for (const auto& k : n.kids) {
    if (ContainsAnchor(k)) return true;
  }
  return false;
}

class Emitter {
 public:
  explicit Emitter(RegexTextMode mode) : mode_(mode) {}

  // "" for a node that matches only the empty string.
  std::string Emit(const Node& n) const {
    switch (n.kind) {
      case Node::Kind::kEmpty:
      case Node::Kind::kBegin:
      case Node::Kind::kEnd:
        return "";
      case Node::Kind::kSet:
        if (n.set.IsSingle()) return GbnfLiteral(Text(n.set.ranges()[0].lo));
        return mode_ == RegexTextMode::kRaw ? n.set.ToGbnf() : JsonStringCharsGbnf(n.set);
      case Node::Kind::kConcat: return EmitConcat(n.kids);
      case Node::Kind::kAlt: {
        std::vector<std::string> alts;
        bool has_empty = false;
        for (const auto& k : n.kids) {
          std::string e = Emit(k);
          if (e.empty()) has_empty = true;
          else alts.push_back(std::move(e));
        }
        if (alts.empty()) return "";
        std::string out = "(";
        for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
        out += has_empty ? ")?" : ")";
        return out;
      }
      case Node::Kind::kRepeat: {
        const std::string e = Emit(n.kids[0]);
        if (e.empty() || n.max == 0) return "";
        std::string out = n.kids[0].kind == Node::Kind::kSet ? e : "(" + e + ")";
        if (n.min == 0 && n.max == -1) return out + "*";
        if (n.min == 1 && n.max == -1) return out + "+";
        if (n.min == 0 && n.max == 1) return out + "?";
        if (n.min == 1 && n.max == 1) return out;
        if (n.max == -1) return out + "{" + std::to_string(n.min) + ",}";
        if (n.min == n.max) return out + "{" + std::to_string(n.min) + "}";
        return out + "{" + std::to_string(n.min) + "," + std::to_string(n.max) + "}";
      }
    }
    return "";
  }

  std::string EmitConcat(const std::vector<Node>& kids) const {
    std::string out, pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (!out.empty()) out += ' ';
      out += GbnfLiteral(pending);
      pending.clear();
    };
    for (const auto& k : kids) {
      if (k.kind == Node::Kind::kSet && k.set.IsSingle()) {
        pending += Text(k.set.ranges()[0].lo);
        continue;
      }
      flush();
      std::string e = Emit(k);
      if (e.empty()) continue;
      if (!out.empty()) out += ' ';
      out += e;
    }
    flush();
    return out;
  }

  std::string AnyString() const {
    const CodePointSet all = CodePointSet::All();
    std::string out;
    if (mode_ == RegexTextMode::kRaw) {
      out = all.ToGbnf();
    } else {
      out.append(1, '(').append(JsonStringCharsGbnf(all)).append(1, ')');
    }
    out += '*';
    return out;
  }

 private:
  std::string Text(char32_t c) const {
    if (mode_ == RegexTextMode::kJsonString) return JsonEscapeCodePoint(c);
    std::string s;
    AppendCodePointUtf8(c, &s);
    return s;
  }

  RegexTextMode mode_;
};

}  // namespace

Result<std::string> RegexToGbnfExpression(std::string_view regex, RegexMatchMode match,
                                          RegexTextMode text) {
  std::u32string cps;
  if (!DecodeUtf8(regex, &cps)) return InvalidArgument("regex: not valid UTF-8");
  Parser parser(std::move(cps));
  auto parsed = parser.ParseAll();
  if (!parsed.ok()) return parsed.status();

  std::vector<Node> branches;
  if (parsed->kind == Node::Kind::kAlt) {
    branches = std::move(parsed->kids);
  } else {
    branches.push_back(std::move(*parsed));
  }
  const Emitter emitter(text);
  std::vector<std::string> alts;
  bool has_empty = false;
  for (auto& branch : branches) {
    std::vector<Node> items;
    if (branch.kind == Node::Kind::kConcat) items = std::move(branch.kids);
    else if (branch.kind != Node::Kind::kEmpty) items.push_back(std::move(branch));
    bool anchored_start = false, anchored_end = false;
    if (!items.empty() && items.front().kind == Node::Kind::kBegin) {
      anchored_start = true;
      items.erase(items.begin());
    }
    if (!items.empty() && items.back().kind == Node::Kind::kEnd) {
      anchored_end = true;
      items.pop_back();
    }
    for (const auto& item : items) {
      if (ContainsAnchor(item)) {
        return InvalidArgument(
            "regex: anchors ^ and $ are only supported at the start and end of the pattern "
            "(or of a top-level alternative)");
      }
    }
    std::string body = emitter.EmitConcat(items);
    if (match == RegexMatchMode::kSearch) {
      // An unanchored JSON Schema pattern matches anywhere: any text may come
      // before and after it.
      if (!anchored_start) body = emitter.AnyString() + (body.empty() ? "" : " " + body);
      if (!anchored_end) body += (body.empty() ? "" : " ") + emitter.AnyString();
    }
    if (body.empty()) has_empty = true;
    else alts.push_back(std::move(body));
  }
  if (alts.empty()) return std::string();
  std::string out;
  if (alts.size() == 1 && !has_empty) return alts[0];
  out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  out += has_empty ? ")?" : ")";
  return out;
}

Result<std::string> RegexToGbnf(std::string_view regex, std::string_view root_name) {
  if (root_name.empty() || root_name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") !=
                               std::string_view::npos) {
    return InvalidArgument("regex grammar: root name '" + std::string(root_name) + "' must match [a-zA-Z0-9-]+");
  }
  auto expr = RegexToGbnfExpression(regex, RegexMatchMode::kFullMatch, RegexTextMode::kRaw);
  if (!expr.ok()) return expr.status();
  return std::string(root_name) + " ::= " + (expr->empty() ? std::string("\"\"") : *expr) + "\n";
}

}  // namespace pagoda::grammar
