// OutputParser: splits a choice's generated text, as it streams, into
// reasoning, answer content and tool calls in the model's dialect
// (chat_format.h). Marker text (<think>, <tool_call>, [TOOL_CALLS], ...) never
// reaches content; only as many bytes are held back as a partial marker
// needs. The accumulated message() is what the deltas add up to, so a
// non-streamed response (everything pushed, then Finish) and a stream give
// the same result by construction.
//
// Not thread-safe; one per choice.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/chat_response.h"
#include "api/tools.h"
#include "chat/chat_format.h"
#include "chat/json_call_scanner.h"

namespace pagoda::chat {

struct ParserOptions {
  ChatFormat format;
  bool tools = false;           // tools are offered: recognise calls
  bool reasoning_open = false;  // the prompt opened a reasoning block (PromptOpensReasoning)
  // The offered functions: GLM-4.5 arguments are typed by their schemas
  // (glm_arguments.h); without them a value that parses as JSON is JSON.
  std::vector<api::ToolFunction> functions;
  // The id of the call with this index; default "call_<index>".
  std::function<std::string(int index)> make_id;
};

// What the deltas add up to.
struct ParsedMessage {
  std::string content;
  std::string reasoning;
  bool has_reasoning = false;  // a reasoning block was seen (possibly empty)
  std::vector<api::ToolCall> tool_calls;
};

class OutputParser {
 public:
  explicit OutputParser(ParserOptions options);
  ~OutputParser();

  api::ChatDelta Push(std::string_view text);
  // The end of the output: what was held back is released (an unfinished
  // call keeps the arguments it has; one without a name becomes content).
  api::ChatDelta Finish();

  const ParsedMessage& message() const { return message_; }

 private:
  enum class Mode {
    kStart,          // before the first byte: reasoning may open
    kReasoning,      // inside <think>...</think>
    kAfterReasoning, // whitespace after </think> is dropped
    kAnswerStart,    // JSON dialects: a call may start with '{'
    kContent,
    kJsonCall,       // a JSON object call (all but DeepSeek)
    kHermesClose,    // after a Hermes call's object: expect </tool_call>
    kMistralOpen,    // after [TOOL_CALLS]: expect '['
    kMistralNext,    // between array elements
    kDsCall,         // DeepSeek: expect <｜tool▁call▁begin｜> or <｜tool▁calls▁end｜>
    kDsType,         // "function" up to <｜tool▁sep｜>
    kDsName,         // the name up to "\n"
    kDsFence,        // "```json\n"
    kDsArgs,         // argument text up to "\n```"
    kDsCallEnd,      // <｜tool▁call▁end｜>
    kKimiCall,       // Kimi: expect <|tool_call_begin|> or <|tool_calls_section_end|>
    kKimiId,         // "functions.NAME:IDX" up to <|tool_call_argument_begin|>
    kKimiArgs,       // argument text up to <|tool_call_end|>
    kGlmName,        // GLM: the name up to "\n" (or <arg_key>, </tool_call>)
    kGlmArgs,        // expect <arg_key> or </tool_call>
    kGlmKey,         // key text up to </arg_key>
    kGlmValueOpen,   // expect <arg_value>
    kGlmValue,       // value text up to </arg_value>
    kBetweenCalls,   // whitespace (and ';' for JSON dialects) between calls
  };

  // One step over pending_ from pos_; false when more input is needed.
  bool Step(bool final, api::ChatDelta* d);
  bool StepContent(bool final, api::ChatDelta* d);
  bool StepJsonCall(bool final, api::ChatDelta* d);
  bool StepDeepSeek(bool final, api::ChatDelta* d);
  bool StepKimi(bool final, api::ChatDelta* d);
  bool StepGlm(bool final, api::ChatDelta* d);
  // GLM: ends the arguments object of the current call.
  void CloseGlmArguments(api::ChatDelta* d);
  std::string_view Rest() const { return std::string_view(pending_).substr(pos_); }
  // Matches `marker` at the front of Rest(): 1 matched (consumed), 0 a partial
  // match that needs more input (unless final), -1 no match.
  int Expect(std::string_view marker, bool final);
  void SkipSpace(std::string_view extra = {});

  void EmitContent(std::string_view s, api::ChatDelta* d);
  void EmitReasoning(std::string_view s, api::ChatDelta* d);
  void BeginCall();
  // `id`: the call's id when the model writes one (Kimi K2); else make_id.
  void EmitCallName(std::string name, api::ChatDelta* d, std::string id = {});
  void EmitCallArguments(std::string_view args, api::ChatDelta* d);
  // A call that broke off: its text becomes content unless it was named.
  void AbandonCall(api::ChatDelta* d);
  void AfterCall();

  ParserOptions options_;
  std::vector<std::string> call_markers_;  // in content: what opens calls
  Mode mode_ = Mode::kStart;
  std::string pending_;
  size_t pos_ = 0;
  ParsedMessage message_;
  std::unique_ptr<JsonCallScanner> scanner_;
  std::string call_raw_;   // the current call's text (content if it is abandoned)
  bool call_named_ = false;
  std::string ds_name_;
  bool kimi_args_started_ = false;
  std::string glm_key_;
  int glm_pairs_ = 0;
};

}  // namespace pagoda::chat
