#include "chat/output_parser.h"

#include <algorithm>
#include <utility>

#include "chat/glm_arguments.h"

namespace pagoda::chat {

namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
// DeepSeek V3 markers: fullwidth bars (U+FF5C) and U+2581 as word separators.
constexpr std::string_view kDsCallsBegin = "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>";
constexpr std::string_view kDsCallsEnd = "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>";
constexpr std::string_view kDsCallBegin = "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>";
constexpr std::string_view kDsCallEnd = "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>";
constexpr std::string_view kDsSep = "<\xef\xbd\x9ctool\xe2\x96\x81" "sep\xef\xbd\x9c>";
constexpr std::string_view kDsFence = "```json\n";
constexpr std::string_view kDsArgsEnd = "\n```";
// Kimi K2 markers (vLLM's kimi_k2 parser also takes the singular section ones).
constexpr std::string_view kKimiSectionBegin = "<|tool_calls_section_begin|>";
constexpr std::string_view kKimiSectionBeginAlt = "<|tool_call_section_begin|>";
constexpr std::string_view kKimiSectionEnd = "<|tool_calls_section_end|>";
constexpr std::string_view kKimiSectionEndAlt = "<|tool_call_section_end|>";
constexpr std::string_view kKimiCallBegin = "<|tool_call_begin|>";
constexpr std::string_view kKimiArgBegin = "<|tool_call_argument_begin|>";
constexpr std::string_view kKimiCallEnd = "<|tool_call_end|>";
// GLM-4.5 markers (calls open with kHermesOpen and close with kHermesClose).
constexpr std::string_view kGlmKeyOpen = "<arg_key>";
constexpr std::string_view kGlmKeyClose = "</arg_key>";
constexpr std::string_view kGlmValueOpen = "<arg_value>";
constexpr std::string_view kGlmValueClose = "</arg_value>";
// A GLM call's name longer than this without its newline is not a call.
constexpr size_t kGlmMaxName = 256;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// "functions.get_weather:0" -> "get_weather" (the prefix and index optional).
std::string KimiName(std::string_view id) {
  const size_t colon = id.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < id.size() &&
      std::all_of(id.begin() + colon + 1, id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    id = id.substr(0, colon);
  }
  constexpr std::string_view kPrefix = "functions.";
  if (id.substr(0, kPrefix.size()) == kPrefix) id.remove_prefix(kPrefix.size());
  return std::string(id);
}

// The length of the longest suffix of `s` that is a proper prefix of a marker:
// the bytes to hold back because a marker may be starting.
size_t PartialSuffix(std::string_view s, const std::vector<std::string_view>& markers) {
  size_t best = 0;
  for (std::string_view m : markers) {
    for (size_t n = std::min(s.size(), m.size() - 1); n > best; --n) {
      if (s.substr(s.size() - n) == m.substr(0, n)) {
        best = n;
        break;
      }
    }
  }
  return best;
}

bool JsonStartDialect(ToolDialect d) { return d == ToolDialect::kLlama3 || d == ToolDialect::kGeneric; }

// Dialects whose calls may open the answer without a marker: a JSON object
// (Llama 3, generic), or Mistral's array when [TOOL_CALLS] (a control token
// a grammar cannot produce) is missing.
bool BareStartDialect(ToolDialect d) { return JsonStartDialect(d) || d == ToolDialect::kMistral; }

}  // namespace

OutputParser::OutputParser(ParserOptions options) : options_(std::move(options)) {
  if (!options_.make_id) options_.make_id = [](int i) { return "call_" + std::to_string(i); };
  if (options_.tools) {
    switch (options_.format.dialect) {
      case ToolDialect::kHermes: call_markers_ = {std::string(kHermesOpen)}; break;
      case ToolDialect::kLlama3: call_markers_ = {std::string(kPythonTag)}; break;
      case ToolDialect::kMistral: call_markers_ = {std::string(kMistralCalls)}; break;
      case ToolDialect::kDeepSeekV3: call_markers_ = {std::string(kDsCallsBegin), std::string(kDsCallBegin)}; break;
      case ToolDialect::kKimiK2:
        call_markers_ = {std::string(kKimiSectionBegin), std::string(kKimiSectionBeginAlt),
                         std::string(kKimiCallBegin)};
        break;
      case ToolDialect::kGlm45: call_markers_ = {std::string(kHermesOpen)}; break;
      case ToolDialect::kGeneric: break;
    }
  }
  if (options_.reasoning_open && options_.format.has_reasoning()) {
    mode_ = Mode::kReasoning;
    message_.has_reasoning = true;
  }
}

OutputParser::~OutputParser() = default;

api::ChatDelta OutputParser::Push(std::string_view text) {
  api::ChatDelta d;
  pending_.append(text);
  while (Step(false, &d)) {
  }
  if (pos_ > 0) {
    pending_.erase(0, pos_);
    pos_ = 0;
  }
  return d;
}

api::ChatDelta OutputParser::Finish() {
  api::ChatDelta d;
  while (Step(true, &d)) {
  }
  switch (mode_) {
    case Mode::kJsonCall:
    case Mode::kDsType:
    case Mode::kDsName:
    case Mode::kDsFence:
    case Mode::kDsArgs:
    case Mode::kKimiId:
    case Mode::kGlmName:
      if (!call_named_) EmitContent(call_raw_ + std::string(Rest()), &d);
      break;
    case Mode::kGlmArgs:
    case Mode::kGlmKey:
    case Mode::kGlmValueOpen:
    case Mode::kGlmValue:
      CloseGlmArguments(&d);  // the pairs read so far
      break;
    default:
      break;  // partial markers and whitespace between calls
  }
  pending_.clear();
  pos_ = 0;
  return d;
}

int OutputParser::Expect(std::string_view marker, bool final) {
  const std::string_view r = Rest();
  if (r.size() >= marker.size()) {
    if (r.substr(0, marker.size()) != marker) return -1;
    call_raw_.append(marker);
    pos_ += marker.size();
    return 1;
  }
  if (marker.substr(0, r.size()) == r && !final) return 0;
  return -1;
}

void OutputParser::SkipSpace(std::string_view extra) {
  while (pos_ < pending_.size() &&
         (IsSpace(pending_[pos_]) || extra.find(pending_[pos_]) != std::string_view::npos)) {
    ++pos_;
  }
}

void OutputParser::EmitContent(std::string_view s, api::ChatDelta* d) {
  if (s.empty()) return;
  message_.content.append(s);
  d->content.append(s);
}

void OutputParser::EmitReasoning(std::string_view s, api::ChatDelta* d) {
  if (s.empty()) return;
  message_.reasoning.append(s);
  d->reasoning.append(s);
}

void OutputParser::BeginCall() {
  scanner_ = std::make_unique<JsonCallScanner>();
  call_raw_.clear();
  call_named_ = false;
}

void OutputParser::EmitCallName(std::string name, api::ChatDelta* d, std::string id) {
  const int index = static_cast<int>(message_.tool_calls.size());
  api::ToolCall call;
  call.id = id.empty() ? options_.make_id(index) : std::move(id);
  call.name = name;
  message_.tool_calls.push_back(call);
  api::ToolCallDelta delta;
  delta.index = index;
  delta.id = call.id;
  delta.name = std::move(name);
  d->tool_calls.push_back(std::move(delta));
  call_named_ = true;
}

void OutputParser::EmitCallArguments(std::string_view args, api::ChatDelta* d) {
  if (args.empty() || message_.tool_calls.empty()) return;
  const int index = static_cast<int>(message_.tool_calls.size()) - 1;
  message_.tool_calls.back().arguments.append(args);
  if (d->tool_calls.empty() || d->tool_calls.back().index != index) {
    api::ToolCallDelta delta;
    delta.index = index;
    d->tool_calls.push_back(std::move(delta));
  }
  d->tool_calls.back().arguments.append(args);
}

void OutputParser::AbandonCall(api::ChatDelta* d) {
  if (!call_named_) EmitContent(call_raw_, d);
  call_raw_.clear();
  scanner_.reset();
  mode_ = Mode::kContent;
}

void OutputParser::AfterCall() {
  scanner_.reset();
  call_raw_.clear();
  switch (options_.format.dialect) {
    case ToolDialect::kHermes: mode_ = Mode::kHermesClose; break;
    case ToolDialect::kMistral: mode_ = Mode::kMistralNext; break;
    case ToolDialect::kDeepSeekV3: mode_ = Mode::kDsCallEnd; break;
    case ToolDialect::kKimiK2: mode_ = Mode::kKimiCall; break;
    default: mode_ = Mode::kBetweenCalls; break;
  }
}

bool OutputParser::Step(bool final, api::ChatDelta* d) {
  const ChatFormat& f = options_.format;
  const Mode answer_start =
      options_.tools && BareStartDialect(f.dialect) ? Mode::kAnswerStart : Mode::kContent;
  switch (mode_) {
    case Mode::kStart: {
      if (!f.has_reasoning()) {
        mode_ = answer_start;
        return true;
      }
      const std::string_view r = Rest();
      size_t k = 0;
      while (k < r.size() && IsSpace(r[k])) ++k;
      const std::string_view tail = r.substr(k);
      if (tail.size() >= f.think_open.size() && tail.substr(0, f.think_open.size()) == f.think_open) {
        pos_ += k + f.think_open.size();
        message_.has_reasoning = true;
        mode_ = Mode::kReasoning;
        return true;
      }
      if (!final && std::string_view(f.think_open).substr(0, tail.size()) == tail) return false;
      mode_ = answer_start;
      return true;
    }
    case Mode::kReasoning: {
      const std::string_view r = Rest();
      const size_t p = r.find(f.think_close);
      if (p != std::string_view::npos) {
        EmitReasoning(r.substr(0, p), d);
        pos_ += p + f.think_close.size();
        mode_ = Mode::kAfterReasoning;
        return true;
      }
      const size_t hold = final ? 0 : PartialSuffix(r, {f.think_close});
      EmitReasoning(r.substr(0, r.size() - hold), d);
      pos_ += r.size() - hold;
      return false;
    }
    case Mode::kAfterReasoning:
      SkipSpace();
      if (Rest().empty()) return false;
      mode_ = answer_start;
      return true;
    case Mode::kAnswerStart: {
      const std::string_view r = Rest();
      size_t k = 0;
      while (k < r.size() && IsSpace(r[k])) ++k;
      if (k == r.size() && !final) return false;
      if (k < r.size() && r[k] == '{' && JsonStartDialect(f.dialect)) {
        pos_ += k;
        BeginCall();
        mode_ = Mode::kJsonCall;
        return true;
      }
      if (k < r.size() && r[k] == '[' && f.dialect == ToolDialect::kMistral) {
        // "[" then "{": an array of calls.
        size_t j = k + 1;
        while (j < r.size() && IsSpace(r[j])) ++j;
        if (j == r.size() && !final) return false;
        if (j < r.size() && r[j] == '{') {
          pos_ += k + 1;
          mode_ = Mode::kMistralNext;
          return true;
        }
      }
      mode_ = Mode::kContent;
      return true;
    }
    case Mode::kContent:
      return StepContent(final, d);
    case Mode::kJsonCall:
      return StepJsonCall(final, d);
    case Mode::kHermesClose: {
      SkipSpace();
      const int m = Expect(kHermesClose, final);
      if (m == 0 || (m == -1 && Rest().empty())) return false;
      mode_ = m == 1 ? Mode::kBetweenCalls : Mode::kContent;
      return true;
    }
    case Mode::kMistralOpen:
      SkipSpace();
      if (Rest().empty()) return false;
      if (Rest()[0] == '[') {
        ++pos_;
        mode_ = Mode::kMistralNext;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    case Mode::kMistralNext:
      SkipSpace(",");
      if (Rest().empty()) return false;
      if (Rest()[0] == '{') {
        BeginCall();
        mode_ = Mode::kJsonCall;
      } else if (Rest()[0] == ']') {
        ++pos_;
        mode_ = Mode::kBetweenCalls;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    case Mode::kBetweenCalls:
      SkipSpace(JsonStartDialect(f.dialect) ? ";," : "");
      if (Rest().empty()) return false;
      if (JsonStartDialect(f.dialect) && Rest()[0] == '{') {
        BeginCall();
        mode_ = Mode::kJsonCall;
      } else {
        mode_ = Mode::kContent;
      }
      return true;
    case Mode::kKimiCall:
    case Mode::kKimiId:
    case Mode::kKimiArgs:
      return StepKimi(final, d);
    case Mode::kGlmName:
    case Mode::kGlmArgs:
    case Mode::kGlmKey:
    case Mode::kGlmValueOpen:
    case Mode::kGlmValue:
      return StepGlm(final, d);
    default:
      return StepDeepSeek(final, d);
  }
}

bool OutputParser::StepContent(bool final, api::ChatDelta* d) {
  const std::string_view r = Rest();
  if (call_markers_.empty()) {
    EmitContent(r, d);
    pos_ += r.size();
    return false;
  }
  size_t best = std::string_view::npos;
  std::string_view marker;
  for (const std::string& m : call_markers_) {
    const size_t p = r.find(m);
    if (p < best) {
      best = p;
      marker = m;
    }
  }
  if (best == std::string_view::npos) {
    std::vector<std::string_view> ms(call_markers_.begin(), call_markers_.end());
    size_t n = r.size() - (final ? 0 : PartialSuffix(r, ms));
    // Whitespace is held too: before a call it is dropped.
    if (!final) {
      while (n > 0 && IsSpace(r[n - 1])) --n;
    }
    EmitContent(r.substr(0, n), d);
    pos_ += n;
    return false;
  }
  size_t n = best;
  while (n > 0 && IsSpace(r[n - 1])) --n;
  EmitContent(r.substr(0, n), d);
  pos_ += best + marker.size();
  if (marker == kMistralCalls) {
    mode_ = Mode::kMistralOpen;
  } else if (marker == kDsCallsBegin) {
    mode_ = Mode::kDsCall;
  } else if (marker == kDsCallBegin) {
    BeginCall();
    mode_ = Mode::kDsType;
  } else if (marker == kKimiSectionBegin || marker == kKimiSectionBeginAlt) {
    mode_ = Mode::kKimiCall;
  } else if (marker == kKimiCallBegin) {
    BeginCall();
    mode_ = Mode::kKimiId;
  } else if (options_.format.dialect == ToolDialect::kGlm45) {
    BeginCall();  // <tool_call>
    mode_ = Mode::kGlmName;
  } else {
    BeginCall();  // <tool_call>, <|python_tag|>
    mode_ = Mode::kJsonCall;
  }
  return true;
}

bool OutputParser::StepJsonCall(bool final, api::ChatDelta* d) {
  (void)final;
  const std::string_view r = Rest();
  JsonCallScanner::Output out;
  const size_t n = scanner_->Push(r, &out);
  call_raw_.append(r.substr(0, n));
  pos_ += n;
  if (out.name) EmitCallName(std::move(*out.name), d);
  EmitCallArguments(out.arguments, d);
  if (scanner_->done()) {
    AfterCall();
    return true;
  }
  if (scanner_->failed()) {
    AbandonCall(d);
    return true;
  }
  return false;
}

bool OutputParser::StepDeepSeek(bool final, api::ChatDelta* d) {
  switch (mode_) {
    case Mode::kDsCall: {
      SkipSpace();
      int m = Expect(kDsCallBegin, final);
      if (m == 1) {
        BeginCall();
        mode_ = Mode::kDsType;
        return true;
      }
      if (m == 0 || Rest().empty()) return false;
      m = Expect(kDsCallsEnd, final);
      if (m == 0) return false;
      mode_ = m == 1 ? Mode::kBetweenCalls : Mode::kContent;
      return true;
    }
    case Mode::kDsType: {
      const std::string_view r = Rest();
      const size_t p = r.find(kDsSep);
      if (p == std::string_view::npos) return false;
      call_raw_.append(r.substr(0, p + kDsSep.size()));
      pos_ += p + kDsSep.size();
      mode_ = Mode::kDsName;
      return true;
    }
    case Mode::kDsName: {
      const std::string_view r = Rest();
      const size_t p = r.find('\n');
      if (p == std::string_view::npos) return false;
      call_raw_.append(r.substr(0, p + 1));
      pos_ += p + 1;
      EmitCallName(std::string(r.substr(0, p)), d);
      mode_ = Mode::kDsFence;
      return true;
    }
    case Mode::kDsFence: {
      const int m = Expect(kDsFence, final);
      if (m == 0) return false;
      mode_ = Mode::kDsArgs;  // without a fence, the arguments start here
      return true;
    }
    case Mode::kDsArgs: {
      const std::string_view r = Rest();
      const size_t p = r.find(kDsArgsEnd);
      if (p != std::string_view::npos) {
        EmitCallArguments(r.substr(0, p), d);
        pos_ += p + kDsArgsEnd.size();
        AfterCall();
        return true;
      }
      const size_t hold = final ? 0 : PartialSuffix(r, {kDsArgsEnd});
      EmitCallArguments(r.substr(0, r.size() - hold), d);
      pos_ += r.size() - hold;
      return false;
    }
    case Mode::kDsCallEnd: {
      SkipSpace();
      const int m = Expect(kDsCallEnd, final);
      if (m == 0 || (m == -1 && Rest().empty())) return false;
      mode_ = Mode::kDsCall;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace pagoda::chat

namespace pagoda::chat {

bool OutputParser::StepKimi(bool final, api::ChatDelta* d) {
  switch (mode_) {
    case Mode::kKimiCall: {
      SkipSpace();
      if (Rest().empty()) return false;
      int m = Expect(kKimiCallBegin, final);
      if (m == 1) {
        BeginCall();
        kimi_args_started_ = false;
        mode_ = Mode::kKimiId;
        return true;
      }
      if (m == 0) return false;
      for (std::string_view end : {kKimiSectionEnd, kKimiSectionEndAlt}) {
        m = Expect(end, final);
        if (m == 0) return false;
        if (m == 1) {
          mode_ = Mode::kBetweenCalls;
          return true;
        }
      }
      mode_ = Mode::kContent;
      return true;
    }
    case Mode::kKimiId: {
      const std::string_view r = Rest();
      const size_t p = r.find(kKimiArgBegin);
      if (p == std::string_view::npos) return false;
      const std::string id(Trim(r.substr(0, p)));
      call_raw_.append(r.substr(0, p + kKimiArgBegin.size()));
      pos_ += p + kKimiArgBegin.size();
      const std::string name = KimiName(id);
      if (name.empty()) {
        AbandonCall(d);
        return true;
      }
      EmitCallName(name, d, id);
      kimi_args_started_ = false;
      mode_ = Mode::kKimiArgs;
      return true;
    }
    case Mode::kKimiArgs: {
      if (!kimi_args_started_) {
        SkipSpace();  // vLLM strips the arguments
        if (Rest().empty() && !final) return false;
        kimi_args_started_ = true;
      }
      const std::string_view r = Rest();
      const size_t p = r.find(kKimiCallEnd);
      if (p != std::string_view::npos) {
        std::string_view args = r.substr(0, p);
        while (!args.empty() && IsSpace(args.back())) args.remove_suffix(1);
        EmitCallArguments(args, d);
        pos_ += p + kKimiCallEnd.size();
        AfterCall();
        return true;
      }
      size_t n = r.size() - (final ? 0 : PartialSuffix(r, {kKimiCallEnd}));
      while (n > 0 && IsSpace(r[n - 1])) --n;  // trailing space is held: it may precede the end
      EmitCallArguments(r.substr(0, n), d);
      pos_ += final ? r.size() : n;
      return false;
    }
    default:
      return false;
  }
}

void OutputParser::CloseGlmArguments(api::ChatDelta* d) {
  EmitCallArguments(glm_pairs_ > 0 ? "}" : "{}", d);
  glm_pairs_ = 0;
}

bool OutputParser::StepGlm(bool final, api::ChatDelta* d) {
  switch (mode_) {
    case Mode::kGlmName: {
      const std::string_view r = Rest();
      const size_t p = std::min({r.find('\n'), r.find(kGlmKeyOpen), r.find(kHermesClose)});
      if (p == std::string_view::npos) {
        if (r.size() <= kGlmMaxName) return false;
        AbandonCall(d);
        return true;
      }
      const std::string name(Trim(r.substr(0, p)));
      if (name.empty()) {
        AbandonCall(d);
        return true;
      }
      const size_t used = p + (r[p] == '\n' ? 1 : 0);
      call_raw_.append(r.substr(0, used));
      pos_ += used;
      EmitCallName(name, d);
      glm_pairs_ = 0;
      mode_ = Mode::kGlmArgs;
      return true;
    }
    case Mode::kGlmArgs:
    case Mode::kGlmValueOpen: {
      SkipSpace();
      if (Rest().empty()) return false;
      const bool want_value = mode_ == Mode::kGlmValueOpen;
      int m = Expect(want_value ? kGlmValueOpen : kGlmKeyOpen, final);
      if (m == 0) return false;
      if (m == 1) {
        mode_ = want_value ? Mode::kGlmValue : Mode::kGlmKey;
        return true;
      }
      m = want_value ? -1 : Expect(kHermesClose, final);
      if (m == 0) return false;
      CloseGlmArguments(d);
      if (m == 1) {
        AfterCall();
      } else {
        call_raw_.clear();  // a named call keeps what it read; the rest is content
        mode_ = Mode::kContent;
      }
      return true;
    }
    case Mode::kGlmKey:
    case Mode::kGlmValue: {
      const bool key = mode_ == Mode::kGlmKey;
      const std::string_view close = key ? kGlmKeyClose : kGlmValueClose;
      const std::string_view r = Rest();
      const size_t p = r.find(close);
      if (p == std::string_view::npos) return false;
      if (key) {
        glm_key_ = std::string(Trim(r.substr(0, p)));
        mode_ = Mode::kGlmValueOpen;
      } else {
        const std::string& name = message_.tool_calls.back().name;
        const std::string json_key =
            nlohmann::json(glm_key_).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        const auto* schema = GlmPropertySchema(options_.functions, name, glm_key_);
        EmitCallArguments((glm_pairs_ > 0 ? ", " : "{") + json_key + ": " + GlmArgumentJson(r.substr(0, p), schema), d);
        ++glm_pairs_;
        mode_ = Mode::kGlmArgs;
      }
      call_raw_.append(r.substr(0, p + close.size()));
      pos_ += p + close.size();
      return true;
    }
    default:
      return false;
  }
}

}  // namespace pagoda::chat
