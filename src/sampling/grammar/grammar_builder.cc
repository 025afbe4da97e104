// GBNF syntax tree -> compiled Grammar: helper rules for classes, groups and
// repetitions; minimum lengths; pruning of alternatives that cannot finish;
// left-recursion check.
#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "sampling/grammar/gbnf_parser.h"
#include "sampling/grammar/grammar.h"
#include "sampling/grammar/utf8_ranges.h"

namespace pagoda::grammar {

namespace {
// Compiled elements, all rules together; beyond it a grammar is refused.
constexpr int64_t kMaxElements = int64_t{1} << 20;

int32_t SatAdd(int32_t a, int32_t b) { return std::min<int64_t>(int64_t{a} + b, Grammar::kInfinite); }
}  // namespace

class GrammarBuilder {
 public:
  Result<std::shared_ptr<const Grammar>> Build(std::vector<GbnfRule> rules, std::string_view root);

 private:
  using Seq = std::vector<GrammarElement>;
  struct RawRule {
    std::string name;
    int32_t owner;  // the user rule it was made for
    std::vector<Seq> alts;
  };

  int32_t NewRule(int32_t owner) {
    const int32_t id = static_cast<int32_t>(raw_.size());
    raw_.push_back({rules_names_[static_cast<size_t>(owner)] + "/" + std::to_string(++n_helpers_[owner]), owner, {}});
    return id;
  }
  int32_t ByteSetIndex(const ByteSet& s) {
    auto key = std::array<uint64_t, 4>{s.bits[0], s.bits[1], s.bits[2], s.bits[3]};
    auto [it, inserted] = set_index_.emplace(key, static_cast<int32_t>(g_->byte_sets_.size()));
    if (inserted) g_->byte_sets_.push_back(s);
    return it->second;
  }
  GrammarElement BytesElement(uint8_t lo, uint8_t hi) {
    ByteSet s;
    s.SetRange(lo, hi);
    return {GrammarElement::kBytes, ByteSetIndex(s)};
  }
  Status Count(int64_t n) {
    n_elements_ += n;
    if (n_elements_ > kMaxElements) {
      return InvalidArgument("grammar: too large (more than " + std::to_string(kMaxElements) +
                             " compiled elements; lower the repetition bounds)");
    }
    return Status::Ok();
  }

  Status CompileAlts(const std::vector<GbnfAlt>& alts, int32_t owner, std::vector<Seq>* out);
  Status CompileSeq(const GbnfAlt& alt, int32_t owner, Seq* out);
  Status CompileUnit(const GbnfItem& item, int32_t owner, Seq* out);
  Status CompileClass(const GbnfItem& item, int32_t owner, Seq* out);
  Status Flatten();
  Status ComputeLengthsAndPrune();
  Status CheckLeftRecursion();

  std::shared_ptr<Grammar> g_;
  std::vector<std::string> rules_names_;  // user rules
  std::unordered_map<std::string, int32_t> by_name_;
  std::vector<RawRule> raw_;
  std::vector<int32_t> n_helpers_;
  std::map<std::array<uint64_t, 4>, int32_t> set_index_;
  std::map<std::pair<CodePointRanges, bool>, int32_t> class_rules_;
  int64_t n_elements_ = 0;
};

Status GrammarBuilder::CompileAlts(const std::vector<GbnfAlt>& alts, int32_t owner, std::vector<Seq>* out) {
  for (const GbnfAlt& a : alts) {
    Seq s;
    PAGODA_RETURN_IF_ERROR(CompileSeq(a, owner, &s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

Status GrammarBuilder::CompileSeq(const GbnfAlt& alt, int32_t owner, Seq* out) {
  for (const GbnfItem& item : alt.items) {
    if (item.min_rep == 1 && item.max_rep == 1) {
      PAGODA_RETURN_IF_ERROR(CompileUnit(item, owner, out));
      continue;
    }
    Seq unit;
    PAGODA_RETURN_IF_ERROR(CompileUnit(item, owner, &unit));
    GrammarElement u;
    if (unit.size() == 1) {
      u = unit[0];
    } else {
      const int32_t r = NewRule(owner);
      raw_[static_cast<size_t>(r)].alts.push_back(std::move(unit));
      u = {GrammarElement::kRef, r};
    }
    PAGODA_RETURN_IF_ERROR(Count(item.min_rep + 2));
    for (int32_t i = 0; i < item.min_rep; ++i) out->push_back(u);
    if (item.max_rep < 0) {
      const int32_t star = NewRule(owner);
      raw_[static_cast<size_t>(star)].alts = {Seq{u, {GrammarElement::kRef, star}}, Seq{}};
      out->push_back({GrammarElement::kRef, star});
    } else if (item.max_rep > item.min_rep) {
      // x{0,k} as nested optionals: O1 ::= x | "" ; Oj ::= x Oj-1 | "".
      int32_t prev = -1;
      PAGODA_RETURN_IF_ERROR(Count(int64_t{3} * (item.max_rep - item.min_rep)));
      for (int32_t j = 0; j < item.max_rep - item.min_rep; ++j) {
        const int32_t opt = NewRule(owner);
        Seq first{u};
        if (prev >= 0) first.push_back({GrammarElement::kRef, prev});
        raw_[static_cast<size_t>(opt)].alts = {std::move(first), Seq{}};
        prev = opt;
      }
      out->push_back({GrammarElement::kRef, prev});
    }
  }
  return Status::Ok();
}

Status GrammarBuilder::CompileUnit(const GbnfItem& item, int32_t owner, Seq* out) {
  switch (item.kind) {
    case GbnfItem::kLiteral: {
      std::string bytes;
      for (char32_t cp : item.literal) EncodeUtf8To(cp, &bytes);
      PAGODA_RETURN_IF_ERROR(Count(static_cast<int64_t>(bytes.size())));
      for (char c : bytes) out->push_back(BytesElement(static_cast<uint8_t>(c), static_cast<uint8_t>(c)));
      return Status::Ok();
    }
    case GbnfItem::kClass:
      return CompileClass(item, owner, out);
    case GbnfItem::kRef: {
      auto it = by_name_.find(item.ref);
      if (it == by_name_.end()) {
        return InvalidArgument("grammar: line " + std::to_string(item.line) + ", column " + std::to_string(item.col) +
                               ": undefined rule '" + item.ref + "'");
      }
      PAGODA_RETURN_IF_ERROR(Count(1));
      out->push_back({GrammarElement::kRef, it->second});
      return Status::Ok();
    }
    case GbnfItem::kGroup: {
      if (item.group.size() == 1) return CompileSeq(item.group[0], owner, out);
      const int32_t r = NewRule(owner);
      std::vector<Seq> alts;
      PAGODA_RETURN_IF_ERROR(CompileAlts(item.group, owner, &alts));
      raw_[static_cast<size_t>(r)].alts = std::move(alts);
      PAGODA_RETURN_IF_ERROR(Count(1));
      out->push_back({GrammarElement::kRef, r});
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status GrammarBuilder::CompileClass(const GbnfItem& item, int32_t owner, Seq* out) {
  const CodePointRanges cps = NormalizeClass(item.ranges, item.negated);
  PAGODA_RETURN_IF_ERROR(Count(1));
  if (cps.empty() || cps.back().second < 0x80) {
    ByteSet s;  // ASCII only (or empty: an element that can never match)
    for (auto [lo, hi] : cps) s.SetRange(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
    out->push_back({GrammarElement::kBytes, ByteSetIndex(s)});
    return Status::Ok();
  }
  auto key = std::make_pair(cps, false);
  if (auto it = class_rules_.find(key); it != class_rules_.end()) {
    out->push_back({GrammarElement::kRef, it->second});
    return Status::Ok();
  }
  const int32_t r = NewRule(owner);
  class_rules_.emplace(std::move(key), r);
  ByteSet ascii;
  std::vector<Seq> alts;
  for (const auto& seq : Utf8Sequences(cps)) {
    if (seq.size() == 1) {
      ascii.SetRange(seq[0].lo, seq[0].hi);
      continue;
    }
    Seq s;
    for (ByteRange br : seq) s.push_back(BytesElement(br.lo, br.hi));
    PAGODA_RETURN_IF_ERROR(Count(static_cast<int64_t>(s.size())));
    alts.push_back(std::move(s));
  }
  if (!ascii.Empty()) alts.insert(alts.begin(), Seq{{GrammarElement::kBytes, ByteSetIndex(ascii)}});
  raw_[static_cast<size_t>(r)].alts = std::move(alts);
  out->push_back({GrammarElement::kRef, r});
  return Status::Ok();
}

Status GrammarBuilder::ComputeLengthsAndPrune() {
  const size_t n = raw_.size();
  std::vector<int32_t> len(n, Grammar::kInfinite);
  auto elem_len = [&](const GrammarElement& e) {
    if (e.kind == GrammarElement::kBytes) return g_->byte_sets_[static_cast<size_t>(e.arg)].Empty() ? Grammar::kInfinite : 1;
    return len[static_cast<size_t>(e.arg)];
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = n; r-- > 0;) {
      int32_t best = len[r];
      for (const Seq& s : raw_[r].alts) {
        int32_t sum = 0;
        for (const GrammarElement& e : s) sum = SatAdd(sum, elem_len(e));
        best = std::min(best, sum);
      }
      if (best < len[r]) {
        len[r] = best;
        changed = true;
      }
    }
  }
  for (RawRule& r : raw_) {
    std::erase_if(r.alts, [&](const Seq& s) {
      int32_t sum = 0;
      for (const GrammarElement& e : s) sum = SatAdd(sum, elem_len(e));
      return sum >= Grammar::kInfinite;
    });
  }
  g_->min_len_ = std::move(len);
  if (g_->min_len_[static_cast<size_t>(g_->root_)] >= Grammar::kInfinite) {
    return InvalidArgument("grammar admits no string (rule '" + raw_[static_cast<size_t>(g_->root_)].name +
                           "' has no finite derivation)");
  }
  return Status::Ok();
}

Status GrammarBuilder::CheckLeftRecursion() {
  // Edges r -> s where s can start r before any byte is consumed. A
  // reference in tail position pushes no stack frame (see PdaStepper), so a
  // cycle made only of tail references just revisits the same items; a cycle
  // through any other reference grows the stack forever: left recursion.
  const size_t n = raw_.size();
  struct Edge {
    int32_t to;
    bool tail;
  };
  std::vector<std::vector<Edge>> first(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Seq& s : raw_[r].alts) {
      for (size_t k = 0; k < s.size(); ++k) {
        const GrammarElement& e = s[k];
        if (e.kind == GrammarElement::kBytes) break;
        first[r].push_back({e.arg, k + 1 == s.size()});
        if (g_->min_len_[static_cast<size_t>(e.arg)] != 0) break;
      }
    }
  }
  // Strongly connected components (Kosaraju, iterative).
  std::vector<int32_t> order, comp(n, -1);
  std::vector<uint8_t> seen(n, 0);
  for (size_t start = 0; start < n; ++start) {
    if (seen[start]) continue;
    std::vector<std::pair<int32_t, size_t>> st{{static_cast<int32_t>(start), 0}};
    seen[start] = 1;
    while (!st.empty()) {
      auto& [r, i] = st.back();
      if (i == first[static_cast<size_t>(r)].size()) {
        order.push_back(r);
        st.pop_back();
        continue;
      }
      const int32_t s = first[static_cast<size_t>(r)][i++].to;
      if (!seen[static_cast<size_t>(s)]) {
        seen[static_cast<size_t>(s)] = 1;
        st.push_back({s, 0});
      }
    }
  }
  std::vector<std::vector<int32_t>> rev(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Edge& e : first[r]) rev[static_cast<size_t>(e.to)].push_back(static_cast<int32_t>(r));
  }
  int32_t n_comp = 0;
  for (size_t k = order.size(); k-- > 0;) {
    const int32_t root = order[k];
    if (comp[static_cast<size_t>(root)] >= 0) continue;
    std::vector<int32_t> st{root};
    comp[static_cast<size_t>(root)] = n_comp;
    while (!st.empty()) {
      const int32_t r = st.back();
      st.pop_back();
      for (int32_t p : rev[static_cast<size_t>(r)]) {
        if (comp[static_cast<size_t>(p)] < 0) {
          comp[static_cast<size_t>(p)] = n_comp;
          st.push_back(p);
        }
      }
    }
    ++n_comp;
  }
  for (size_t u = 0; u < n; ++u) {
    for (const Edge& e : first[u]) {
      if (e.tail || comp[u] != comp[static_cast<size_t>(e.to)]) continue;
      // Report a cycle u -> e.to -> ... -> u in user rule names.
      std::vector<int32_t> prev(n, -2);
      std::vector<int32_t> queue{e.to};
      prev[static_cast<size_t>(e.to)] = -1;
      for (size_t q = 0; q < queue.size() && prev[u] == -2; ++q) {
        for (const Edge& f : first[static_cast<size_t>(queue[q])]) {
          if (prev[static_cast<size_t>(f.to)] == -2) {
            prev[static_cast<size_t>(f.to)] = queue[q];
            queue.push_back(f.to);
          }
        }
      }
      std::string cycle, last;
      // Walk forwards: u -> e.to -> ... -> u.
      std::vector<int32_t> chain{static_cast<int32_t>(u)};
      if (static_cast<int32_t>(u) != e.to) {
        std::vector<int32_t> back;
        for (int32_t x = static_cast<int32_t>(u); x != -1; x = prev[static_cast<size_t>(x)]) back.push_back(x);
        // back = u, prev(u), ..., e.to
        for (size_t k = back.size(); k-- > 1;) chain.push_back(back[k]);
      }
      chain.push_back(static_cast<int32_t>(u));
      for (int32_t x : chain) {
        const std::string& nm = rules_names_[static_cast<size_t>(raw_[static_cast<size_t>(x)].owner)];
        if (nm == last) continue;
        if (!cycle.empty()) cycle += " -> ";
        cycle += nm;
        last = nm;
      }
      if (cycle.find(" -> ") == std::string::npos) cycle += " -> " + cycle;
      return InvalidArgument("grammar: left recursion (a rule reaches itself before consuming any byte): " + cycle);
    }
  }
  return Status::Ok();
}

Status GrammarBuilder::Flatten() {
  Grammar& g = *g_;
  g.alt_offsets_.push_back(0);
  for (size_t r = 0; r < raw_.size(); ++r) {
    g.rule_names_.push_back(raw_[r].name);
    for (const Seq& s : raw_[r].alts) {
      g.alt_starts_.push_back(static_cast<int32_t>(g.elements_.size()));
      g.elements_.insert(g.elements_.end(), s.begin(), s.end());
      g.elements_.push_back({GrammarElement::kEnd, static_cast<int32_t>(r)});
    }
    g.alt_offsets_.push_back(static_cast<int32_t>(g.alt_starts_.size()));
  }
  g.min_rest_.assign(g.elements_.size(), 0);
  int32_t acc = 0;
  for (size_t i = g.elements_.size(); i-- > 0;) {
    const GrammarElement& e = g.elements_[i];
    if (e.kind == GrammarElement::kEnd) {
      acc = 0;
    } else {
      acc = SatAdd(acc, e.kind == GrammarElement::kBytes ? 1 : g.min_len_[static_cast<size_t>(e.arg)]);
    }
    g.min_rest_[i] = acc;
  }
  return Status::Ok();
}

Result<std::shared_ptr<const Grammar>> GrammarBuilder::Build(std::vector<GbnfRule> rules, std::string_view root) {
  g_ = std::shared_ptr<Grammar>(new Grammar());
  for (const GbnfRule& r : rules) {
    if (auto it = by_name_.find(r.name); it != by_name_.end()) {
      return InvalidArgument("grammar: line " + std::to_string(r.line) + ", column " + std::to_string(r.col) +
                             ": rule '" + r.name + "' is defined twice");
    }
    const int32_t id = static_cast<int32_t>(rules_names_.size());
    by_name_.emplace(r.name, id);
    rules_names_.push_back(r.name);
    raw_.push_back({r.name, id, {}});
  }
  n_helpers_.assign(rules_names_.size(), 0);
  auto root_it = by_name_.find(std::string(root));
  if (root_it == by_name_.end()) {
    return InvalidArgument("grammar: no rule named '" + std::string(root) + "' (the start rule)");
  }
  g_->root_ = root_it->second;
  for (size_t r = 0; r < rules.size(); ++r) {
    std::vector<Seq> alts;
    PAGODA_RETURN_IF_ERROR(CompileAlts(rules[r].alts, static_cast<int32_t>(r), &alts));
    raw_[r].alts = std::move(alts);
  }
  PAGODA_RETURN_IF_ERROR(ComputeLengthsAndPrune());
  PAGODA_RETURN_IF_ERROR(CheckLeftRecursion());
  PAGODA_RETURN_IF_ERROR(Flatten());
  return std::shared_ptr<const Grammar>(std::move(g_));
}

Result<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text, std::string_view root) {
  PAGODA_ASSIGN_OR_RETURN(std::vector<GbnfRule> rules, ParseGbnf(text));
  if (rules.empty()) return InvalidArgument("grammar: no rules (the text is empty)");
  GrammarBuilder b;
  return b.Build(std::move(rules), root);
}

namespace {
std::string DescribeSet(const ByteSet& s) {
  std::string out = "[";
  for (int b = 0; b < 256; ++b) {
    if (!s.Test(static_cast<uint8_t>(b))) continue;
    int e = b;
    while (e + 1 < 256 && s.Test(static_cast<uint8_t>(e + 1))) ++e;
    auto put = [&](int c) {
      if (c >= 0x21 && c < 0x7F && c != '\\' && c != ']' && c != '-') {
        out += static_cast<char>(c);
      } else {
        static const char* kHex = "0123456789ABCDEF";
        out += "\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    };
    put(b);
    if (e > b) {
      out += '-';
      put(e);
    }
    b = e;
  }
  return out + "]";
}
}  // namespace

std::string Grammar::Describe() const {
  std::string out;
  for (int32_t r = 0; r < n_rules(); ++r) {
    out += rule_names_[static_cast<size_t>(r)] + " ::=";
    bool first = true;
    for (int32_t start : alternatives(r)) {
      if (!first) out += " |";
      first = false;
      for (int32_t p = start; elements_[static_cast<size_t>(p)].kind != GrammarElement::kEnd; ++p) {
        const GrammarElement& e = elements_[static_cast<size_t>(p)];
        out += ' ';
        out += e.kind == GrammarElement::kBytes ? DescribeSet(byte_sets_[static_cast<size_t>(e.arg)])
                                                : rule_names_[static_cast<size_t>(e.arg)];
      }
      if (elements_[static_cast<size_t>(start)].kind == GrammarElement::kEnd) out += " \"\"";
    }
    out += '\n';
  }
  return out;
}

}  // namespace pagoda::grammar
