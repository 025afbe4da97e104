#include "tokenizer/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/jinja/error.h"

namespace pagoda::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  Lexer(std::string_view src, const LexOptions& opt) : src_(src), opt_(opt) {
    // As Jinja's keep_trailing_newline=False: one trailing newline is dropped.
    if (!src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
  }

  std::vector<Token> Run() {
    while (pos_ < src_.size()) {
      const size_t tag = FindTag(pos_);
      const bool is_minus = tag + 2 < src_.size() && src_[tag + 2] == '-';
      std::string text(src_.substr(pos_, tag - pos_));
      if (tag < src_.size() && (src_[tag + 1] == '%' || src_[tag + 1] == '#') && opt_.lstrip_blocks && !is_minus) {
        // Spaces and tabs between the start of the line and the tag go.
        size_t k = text.size();
        while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
        const size_t abs = pos_ + k;
        if (abs == 0 || src_[abs - 1] == '\n') text.resize(k);
      }
      if (trim_newline_ && !text.empty() && text[0] == '\n') text.erase(0, 1);
      if (lstrip_next_) text.erase(0, std::find_if(text.begin(), text.end(), [](char c) { return !IsSpace(c); }) - text.begin());
      if (is_minus && tag < src_.size()) {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      }
      trim_newline_ = lstrip_next_ = false;
      if (!text.empty()) Emit(Token::Type::kText, std::move(text), pos_);
      if (tag >= src_.size()) break;
      pos_ = tag + 2 + (is_minus ? 1 : 0);
      const char kind = src_[tag + 1];
      if (kind == '#') {
        LexComment(tag);
      } else if (kind == '{') {
        Emit(Token::Type::kVarBegin, "{{", tag);
        LexInside("}}", Token::Type::kVarEnd);
      } else if (!TryRaw(tag)) {
        Emit(Token::Type::kBlockBegin, "{%", tag);
        LexInside("%}", Token::Type::kBlockEnd);
        trim_newline_ = opt_.trim_blocks;
      }
    }
    Emit(Token::Type::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t FindTag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  int LineAt(size_t p) {
    while (line_pos_ < p && line_pos_ < src_.size()) {
      if (src_[line_pos_++] == '\n') ++line_;
    }
    return line_;
  }

  void Emit(Token::Type type, std::string text, size_t at) { tokens_.push_back({type, std::move(text), LineAt(at)}); }

  [[noreturn]] void Fail(const std::string& what, size_t at) {
    throw JinjaError("template syntax error at line " + std::to_string(LineAt(at)) + ": " + what);
  }

  void LexComment(size_t tag) {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string_view::npos) Fail("unterminated comment", tag);
    lstrip_next_ = end > pos_ && src_[end - 1] == '-';
    trim_newline_ = opt_.trim_blocks;
    pos_ = end + 2;
  }

  // {% raw %}...{% endraw %}: the body is text, tags and all.
  bool TryRaw(size_t tag) {
    size_t p = pos_;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    if (src_.substr(p, 3) != "raw" || (p + 3 < src_.size() && IsNameChar(src_[p + 3]))) return false;
    p += 3;
    while (p < src_.size() && IsSpace(src_[p])) ++p;
    bool strip_body_start = false;
    if (p < src_.size() && src_[p] == '-') {
      strip_body_start = true;
      ++p;
    }
    if (src_.substr(p, 2) != "%}") Fail("expected %} after raw", tag);
    const size_t body = p + 2;
    // Find {%-? endraw -?%}.
    for (size_t q = src_.find("{%", body); q != std::string_view::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      const bool strip_body_end = r < src_.size() && src_[r] == '-';
      if (strip_body_end) ++r;
      while (r < src_.size() && IsSpace(src_[r])) ++r;
      if (src_.substr(r, 6) != "endraw") continue;
      r += 6;
      while (r < src_.size() && IsSpace(src_[r])) ++r;
      const bool strip_after = r < src_.size() && src_[r] == '-';
      if (strip_after) ++r;
      if (src_.substr(r, 2) != "%}") continue;
      std::string text(src_.substr(body, q - body));
      if (opt_.trim_blocks && !text.empty() && text[0] == '\n') text.erase(0, 1);
      if (strip_body_start) {
        text.erase(0, std::find_if(text.begin(), text.end(), [](char c) { return !IsSpace(c); }) - text.begin());
      }
      if (strip_body_end) {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (opt_.lstrip_blocks) {
        size_t k = text.size();
        while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
        if (k == 0 || text[k - 1] == '\n') text.resize(k);
      }
      if (!text.empty()) Emit(Token::Type::kText, std::move(text), body);
      pos_ = r + 2;
      lstrip_next_ = strip_after;
      trim_newline_ = opt_.trim_blocks;
      return true;
    }
    Fail("unterminated raw block", tag);
  }

  // Tokens up to `close` ("}}" or "%}"), optionally preceded by '-'.
  void LexInside(const char* close, Token::Type end_type) {
    const size_t start = pos_;
    int depth = 0;  // open {} [] (): "}}" inside a dict literal is not the end
    while (true) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) Fail(std::string("missing ") + close, start);
      const char c = src_[pos_];
      if (depth == 0) {
        if (src_.substr(pos_, 2) == close) {
          Emit(end_type, close, pos_);
          pos_ += 2;
          return;
        }
        if (c == '-' && src_.substr(pos_ + 1, 2) == close) {
          Emit(end_type, close, pos_);
          pos_ += 3;
          lstrip_next_ = true;
          return;
        }
      }
      if (c == '\'' || c == '"') {
        LexString();
      } else if (IsDigit(c)) {
        LexNumber();
      } else if (IsNameStart(c)) {
        const size_t b = pos_;
        while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
        Emit(Token::Type::kName, std::string(src_.substr(b, pos_ - b)), b);
      } else {
        static const char* kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string_view op;
        for (const char* t : kTwo) {
          if (src_.substr(pos_, 2) == t) op = t;
        }
        if (op.empty()) {
          if (std::strchr("+-*/%~<>=()[]{},.:|", c) == nullptr) {
            Fail(std::string("unexpected character '") + c + "'", pos_);
          }
          op = src_.substr(pos_, 1);
          if (c == '(' || c == '[' || c == '{') ++depth;
          if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        }
        Emit(Token::Type::kOp, std::string(op), pos_);
        pos_ += op.size();
      }
    }
  }

  void LexNumber() {
    const size_t b = pos_;
    while (pos_ < src_.size() && (IsDigit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    bool is_float = false;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && IsDigit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      while (pos_ < src_.size() && (IsDigit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t q = pos_ + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && IsDigit(src_[q])) {
        is_float = true;
        pos_ = q;
        while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
      }
    }
    std::string text;
    for (char ch : src_.substr(b, pos_ - b)) {
      if (ch != '_') text += ch;
    }
    Emit(is_float ? Token::Type::kFloat : Token::Type::kInt, text, b);
  }

  void LexString() {
    const size_t b = pos_;
    const char quote = src_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) Fail("unterminated string", b);
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= src_.size()) Fail("unterminated string", b);
      const char e = src_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (pos_ + n > src_.size()) Fail("truncated \\" + std::string(1, e) + " escape", b);
          uint32_t cp = 0;
          for (size_t i = 0; i < n; ++i) {
            const char h = src_[pos_ + i];
            const int d = IsDigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) Fail("bad \\" + std::string(1, e) + " escape", b);
            cp = cp * 16 + d;
          }
          if (cp > 0x10FFFF) Fail("escape out of Unicode range", b);
          pos_ += n;
          AppendUtf8(cp, &out);
          break;
        }
        default:  // Python keeps unknown escapes as written
          out += '\\';
          out += e;
      }
    }
    Emit(Token::Type::kString, std::move(out), b);
  }

  std::string_view src_;
  LexOptions opt_;
  size_t pos_ = 0;
  bool trim_newline_ = false;  // trim_blocks: a block tag just closed
  bool lstrip_next_ = false;   // a tag just closed with '-'
  size_t line_pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).Run();
}

}  // namespace pagoda::jinja
