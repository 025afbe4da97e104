#include "chat/json_call_scanner.h"

#include <nlohmann/json.hpp>

namespace pagoda::chat {

namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

bool JsonCallScanner::ValueByte(char c) {
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return true;
  }
  if (scalar_ && depth_ == 0) {
    // true / false / null / a number: ends at a delimiter.
    return !(c == ',' || c == '}' || c == ']' || IsSpace(c));
  }
  if (c == '"') {
    in_string_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if (c == '}' || c == ']') {
    --depth_;
  }
  return true;
}

void JsonCallScanner::AppendValue(char c, Output* out) {
  if (role_ == Role::kName) {
    name_raw_.push_back(c);
  } else if (role_ == Role::kArguments) {
    if (name_) {
      out->arguments.push_back(c);
    } else {
      held_args_.push_back(c);
    }
  }
}

void JsonCallScanner::EndValue(Output* out) {
  if (role_ == Role::kName && !name_) {
    nlohmann::json j = nlohmann::json::parse(name_raw_, nullptr, /*allow_exceptions=*/false);
    name_ = j.is_string() ? j.get<std::string>() : name_raw_;
    out->name = *name_;
    out->arguments = std::move(held_args_) + out->arguments;
    held_args_.clear();
  }
  state_ = State::kAfterValue;
}

size_t JsonCallScanner::Push(std::string_view text, Output* out) {
  size_t i = 0;
  while (i < text.size() && state_ != State::kDone && state_ != State::kFailed) {
    const char c = text[i];
    switch (state_) {
      case State::kBeforeObject:
        if (c == '{') state_ = State::kExpectKey;
        else if (!IsSpace(c)) { state_ = State::kFailed; continue; }
        break;
      case State::kExpectKey:
        if (c == '"') {
          key_.clear();
          key_escape_ = false;
          state_ = State::kKey;
        } else if (c == '}') {
          state_ = State::kDone;
        } else if (!IsSpace(c) && c != ',') {
          state_ = State::kFailed;
          continue;
        }
        break;
      case State::kKey:
        if (key_escape_) {
          key_escape_ = false;
          key_.push_back(c);
        } else if (c == '\\') {
          key_escape_ = true;
        } else if (c == '"') {
          state_ = State::kColon;
        } else {
          key_.push_back(c);
        }
        break;
      case State::kColon:
        if (c == ':') state_ = State::kValueStart;
        else if (!IsSpace(c)) { state_ = State::kFailed; continue; }
        break;
      case State::kValueStart:
        if (IsSpace(c)) break;
        if (key_ == "name" && !name_ && c == '"') {
          role_ = Role::kName;
        } else if ((key_ == "arguments" || key_ == "parameters") && !seen_args_) {
          role_ = Role::kArguments;
          seen_args_ = true;
        } else {
          role_ = Role::kSkip;
        }
        depth_ = 0;
        in_string_ = false;
        escape_ = false;
        scalar_ = !(c == '"' || c == '{' || c == '[');
        state_ = State::kValue;
        continue;  // the first byte belongs to the value
      case State::kValue: {
        if (!ValueByte(c)) {
          EndValue(out);
          continue;  // the delimiter is read in kAfterValue
        }
        AppendValue(c, out);
        if (!scalar_ && depth_ == 0 && !in_string_) EndValue(out);
        break;
      }
      case State::kAfterValue:
        if (c == ',') state_ = State::kExpectKey;
        else if (c == '}') state_ = State::kDone;
        else if (!IsSpace(c)) { state_ = State::kFailed; continue; }
        break;
      case State::kDone:
      case State::kFailed:
        break;
    }
    ++i;
  }
  return i;
}

}  // namespace pagoda::chat
