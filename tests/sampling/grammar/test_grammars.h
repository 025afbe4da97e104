// GBNF grammars shared by the grammar, engine and bench programs.
#pragma once

namespace pagoda::testing {

// JSON (RFC 8259 shape, as llama.cpp's json.gbnf), with bounded whitespace.
inline constexpr const char* kJsonGrammar = R"gbnf(root ::= value
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\""
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,3})?
ws ::= [ \t\n]{0,4}
)gbnf";

// A nested object schema written by hand: a person with an address, tags
// and a list of orders with items.
inline constexpr const char* kNestedObjectGrammar = R"gbnf(root ::= "{" ws "\"name\"" ws ":" ws string "," ws "\"age\"" ws ":" ws int "," ws "\"address\"" ws ":" ws address "," ws "\"tags\"" ws ":" ws tags "," ws "\"orders\"" ws ":" ws orders ws "}"
address ::= "{" ws "\"street\"" ws ":" ws string "," ws "\"city\"" ws ":" ws string ( "," ws "\"zip\"" ws ":" ws string )? ws "}"
tags ::= "[" ws ( string ( "," ws string )* )? ws "]"
orders ::= "[" ws ( order ( "," ws order )* )? ws "]"
order ::= "{" ws "\"id\"" ws ":" ws int "," ws "\"paid\"" ws ":" ws bool "," ws "\"items\"" ws ":" ws items ws "}"
items ::= "[" ws ( item ( "," ws item )* )? ws "]"
item ::= "{" ws "\"sku\"" ws ":" ws string "," ws "\"qty\"" ws ":" ws int ( "," ws "\"price\"" ws ":" ws number )? ws "}"
bool ::= "true" | "false"
int ::= "-"? ([0-9] | [1-9] [0-9]{0,9})
number ::= int ("." [0-9]{1,6})?
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] )* "\""
ws ::= [ \n]{0,2}
)gbnf";

// Arithmetic over nested parentheses.
inline constexpr const char* kArithmeticGrammar = R"gbnf(root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= [0-9]+ | "(" expr ")" | "-" factor
)gbnf";

}  // namespace pagoda::testing
