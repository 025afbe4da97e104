// JsonCallScanner: reads one tool call written as a JSON object,
// {"name": N, "arguments": {...}} ("parameters" is accepted for "arguments",
// as Llama 3 writes it), byte by byte as generation produces it. It reports
// the name once its string is complete and passes the raw text of the
// arguments value on as it arrives (held until the name is known, so a call's
// first delta always carries its name). Other keys are skipped. Not
// thread-safe; one per call being parsed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace pagoda::chat {

class JsonCallScanner {
 public:
  struct Output {
    std::optional<std::string> name;  // set by the Push that completes it
    std::string arguments;            // new argument text
  };

  // Consumes bytes of `text` up to and including the object's closing brace
  // (or up to the first byte that cannot continue a call: failed() is then
  // true). Returns how many bytes were consumed.
  size_t Push(std::string_view text, Output* out);

  bool done() const { return state_ == State::kDone; }
  bool failed() const { return state_ == State::kFailed; }
  bool has_name() const { return name_.has_value(); }
  // Argument text held back because the name has not come yet.
  const std::string& held_arguments() const { return held_args_; }

 private:
  enum class State { kBeforeObject, kExpectKey, kKey, kColon, kValueStart, kValue, kAfterValue, kDone, kFailed };
  enum class Role { kName, kArguments, kSkip };

  // One byte of a value; returns false when the byte ends a scalar value
  // without belonging to it.
  bool ValueByte(char c);
  void AppendValue(char c, Output* out);
  void EndValue(Output* out);

  State state_ = State::kBeforeObject;
  Role role_ = Role::kSkip;
  std::string key_;
  std::string name_raw_;
  std::optional<std::string> name_;
  std::string held_args_;
  bool seen_args_ = false;
  // Value scanner.
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool scalar_ = false;
  bool key_escape_ = false;
};

}  // namespace pagoda::chat
