// The filters, tests and methods (str.startswith, dict.items...) templates
// call, and Python's operators on Values. Each throws JinjaError on a bad
// operand or argument.
#pragma once

#include <optional>
#include <string>

#include "tokenizer/jinja/value.h"

namespace pagoda::jinja {

// `operand | name(args)`.
Value ApplyFilter(const std::string& name, const Value& operand, const CallArgs& args);
// `operand is name(args)`.
bool ApplyTest(const std::string& name, const Value& operand, const CallArgs& args);
// `object.name(args)` for built-in methods of str and dict; nullopt when the
// type has no such method.
std::optional<Value> CallMethod(const Value& object, const std::string& name, const CallArgs& args);
// Whether `object.name` names a built-in method.
bool HasMethod(const Value& object, const std::string& name);

// Binary operators other than and/or: + - * / // % ** ~ == != < > <= >= in "not in".
Value BinaryOp(const std::string& op, const Value& a, const Value& b);
// obj[index] (negative indexes count from the end); undefined when absent.
Value GetItem(const Value& obj, const Value& index);
// obj[start:stop:step]; absent parts are undefined.
Value Slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// What a for loop iterates: list items, dict keys, string characters.
List Iterate(const Value& v);

}  // namespace pagoda::jinja
