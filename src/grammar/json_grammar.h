// JSON (RFC 8259) as byte-level grammar nodes, shared by json_value(),
// json_object() and the JSON Schema expander. Internal to src/grammar.
//
// Layout rule everywhere: no whitespace except one optional space after ':'
// and after ',' (so both {"a":1} and {"a": 1, "b": 2} match), none around
// the value. Each node is made once per builder.
#pragma once

#include <string_view>

#include "grammar/grammar.h"

namespace qvl::json {

using Node = GrammarBuilder::Node;

Node string_char(GrammarBuilder& g);  // one code point of a string's contents: UTF-8 or an escape
Node string(GrammarBuilder& g);       // "…" with any contents
Node integer(GrammarBuilder& g);      // -?(0|[1-9][0-9]*)
Node number(GrammarBuilder& g);       // integer(\.[0-9]+)?([eE][+-]?[0-9]{1,2})?: a finite double
Node value(GrammarBuilder& g);        // any JSON value
Node object(GrammarBuilder& g);       // any JSON object
Node colon(GrammarBuilder& g);        // ":" and an optional space
Node comma(GrammarBuilder& g);        // "," and an optional space
// A string in a format of JSON Schema ("date", "time", "date-time", "uuid"),
// quotes included; -1 for a format it does not know.
Node format(GrammarBuilder& g, std::string_view name);

}  // namespace qvl::json
