// JSON spelled as bytes. Strings admit exactly the valid UTF-8 sequences
// (Unicode 15 table 3-7: no overlongs, no surrogates, nothing past U+10FFFF),
// so a token that ends inside a character leaves the matcher between that
// character's bytes; \u escapes must not leave a lone surrogate, because the
// parsers that read the answer (nlohmann::json among them) refuse one.
#include "grammar/json_grammar.h"

#include "grammar/grammar_builder.h"

namespace qvl::json {
namespace {

using Ranges = std::vector<std::pair<uint8_t, uint8_t>>;

Node optional(GrammarBuilder& g, Node n) { return g.choice({g.literal(""), n}); }

// [0-9]* as a right-recursive rule, so every digit returns to one state.
Node digits0(GrammarBuilder& g) {
  return g.impl().memo("json.digits0", [&] {
    const Node d = g.forward();
    g.define(d, g.choice({g.literal(""), g.sequence({g.bytes_in({{'0', '9'}}), d})}));
    return d;
  });
}

Node digit(GrammarBuilder& g) { return g.impl().memo("json.digit", [&] { return g.bytes_in({{'0', '9'}}); }); }
Node digits1(GrammarBuilder& g) { return g.sequence({digit(g), digits0(g)}); }
Node hex(GrammarBuilder& g) {
  return g.impl().memo("json.hex", [&] { return g.bytes_in({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}); });
}

// After "\u": four hex digits that are not a surrogate, or a high surrogate
// followed by "\u" and a low one.
Node unicode_escape(GrammarBuilder& g) {
  const Node h = hex(g);
  const Node d = g.bytes_in({{'D', 'D'}, {'d', 'd'}});
  const Node bmp = g.choice({
      g.sequence({g.bytes_in({{'0', '9'}, {'A', 'C'}, {'a', 'c'}, {'E', 'F'}, {'e', 'f'}}), h, h, h}),
      g.sequence({d, g.bytes_in({{'0', '7'}}), h, h}),
  });
  const Node pair = g.sequence({d, g.bytes_in({{'8', '9'}, {'A', 'B'}, {'a', 'b'}}), h, h, g.literal("\\u"), d,
                                g.bytes_in({{'C', 'F'}, {'c', 'f'}}), h, h});
  return g.choice({bmp, pair});
}

Node two_digits(GrammarBuilder& g, Ranges first, Ranges second) {
  return g.sequence({g.bytes_in(std::move(first)), g.bytes_in(std::move(second))});
}

Node quoted(GrammarBuilder& g, Node inside) { return g.sequence({g.literal("\""), inside, g.literal("\"")}); }

Node full_date(GrammarBuilder& g) {
  const Node d = digit(g);
  const Node month = g.choice({two_digits(g, {{'0', '0'}}, {{'1', '9'}}), two_digits(g, {{'1', '1'}}, {{'0', '2'}})});
  const Node day = g.choice({two_digits(g, {{'0', '0'}}, {{'1', '9'}}), two_digits(g, {{'1', '2'}}, {{'0', '9'}}),
                             two_digits(g, {{'3', '3'}}, {{'0', '1'}})});
  return g.sequence({d, d, d, d, g.literal("-"), month, g.literal("-"), day});
}

// RFC 3339 full-time: hh:mm:ss(.frac)?(Z|±hh:mm); second 60 is a leap second.
Node full_time(GrammarBuilder& g) {
  const Node hour = g.choice({two_digits(g, {{'0', '1'}}, {{'0', '9'}}), two_digits(g, {{'2', '2'}}, {{'0', '3'}})});
  const Node minute = two_digits(g, {{'0', '5'}}, {{'0', '9'}});
  const Node second = g.choice({minute, g.literal("60")});
  const Node frac = optional(g, g.sequence({g.literal("."), digits1(g)}));
  const Node offset = g.choice({g.literal("Z"), g.sequence({g.bytes_in({{'+', '+'}, {'-', '-'}}), hour, g.literal(":"), minute})});
  return g.sequence({hour, g.literal(":"), minute, g.literal(":"), second, frac, offset});
}

Node uuid(GrammarBuilder& g) {
  const Node h = hex(g);
  std::vector<Node> items;
  for (int group : {8, 4, 4, 4, 12}) {
    if (!items.empty()) items.push_back(g.literal("-"));
    for (int k = 0; k < group; ++k) items.push_back(h);
  }
  return g.sequence(std::move(items));
}

}  // namespace

Node string_char(GrammarBuilder& g) {
  return g.impl().memo("json.string_char", [&] {
    const Node cont = g.bytes_in({{0x80, 0xBF}});
    // Printable ASCII but '"' and '\'; DEL (0x7F) is allowed by RFC 8259.
    const Node ascii = g.bytes_in({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7F}});
    const Node escape = g.sequence({g.literal("\\"), g.choice({g.bytes_in({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'},
                                                                           {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}}),
                                                               g.sequence({g.literal("u"), unicode_escape(g)})})});
    return g.choice({
        ascii,
        escape,
        g.sequence({g.bytes_in({{0xC2, 0xDF}}), cont}),
        g.sequence({g.bytes_in({{0xE0, 0xE0}}), g.bytes_in({{0xA0, 0xBF}}), cont}),
        g.sequence({g.bytes_in({{0xE1, 0xEC}, {0xEE, 0xEF}}), cont, cont}),
        g.sequence({g.bytes_in({{0xED, 0xED}}), g.bytes_in({{0x80, 0x9F}}), cont}),
        g.sequence({g.bytes_in({{0xF0, 0xF0}}), g.bytes_in({{0x90, 0xBF}}), cont, cont}),
        g.sequence({g.bytes_in({{0xF1, 0xF3}}), cont, cont, cont}),
        g.sequence({g.bytes_in({{0xF4, 0xF4}}), g.bytes_in({{0x80, 0x8F}}), cont, cont}),
    });
  });
}

// '"' then T, T -> '"' | char T: the opening quote and every character lead
// to the same automaton state, so a string costs one token mask per context.
Node string(GrammarBuilder& g) {
  return g.impl().memo("json.string", [&] {
    const Node rest = g.forward();
    g.define(rest, g.choice({g.literal("\""), g.sequence({string_char(g), rest})}));
    return g.sequence({g.literal("\""), rest});
  });
}

Node integer(GrammarBuilder& g) {
  return g.impl().memo("json.integer", [&] {
    const Node magnitude = g.choice({g.literal("0"), g.sequence({g.bytes_in({{'1', '9'}}), digits0(g)})});
    return g.sequence({optional(g, g.literal("-")), magnitude});
  });
}

// The exponent has at most two digits: every number stays a finite double,
// which the parsers reading the answer need (nlohmann::json refuses 1e400).
Node number(GrammarBuilder& g) {
  return g.impl().memo("json.number", [&] {
    const Node frac = g.sequence({g.literal("."), digits1(g)});
    const Node exp = g.sequence({g.bytes_in({{'e', 'e'}, {'E', 'E'}}), optional(g, g.bytes_in({{'+', '+'}, {'-', '-'}})),
                                 g.repeat(digit(g), 1, 2)});
    return g.sequence({integer(g), optional(g, frac), optional(g, exp)});
  });
}

Node colon(GrammarBuilder& g) {
  return g.impl().memo("json.colon", [&] { return g.sequence({g.literal(":"), optional(g, g.literal(" "))}); });
}

Node comma(GrammarBuilder& g) {
  return g.impl().memo("json.comma", [&] { return g.sequence({g.literal(","), optional(g, g.literal(" "))}); });
}

// Value and object refer to each other, so both are made together: the
// value rule (returned) and the object node (registered as "json.object").
Node value(GrammarBuilder& g) {
  return g.impl().memo("json.value", [&] {
    const Node v = g.forward();
    const Node member = g.sequence({string(g), colon(g), v});
    const Node obj = g.sequence(
        {g.literal("{"), g.choice({g.literal("}"), g.sequence({g.repeat(member, 1, -1, comma(g)), g.literal("}")})})});
    const Node arr =
        g.sequence({g.literal("["), g.choice({g.literal("]"), g.sequence({g.repeat(v, 1, -1, comma(g)), g.literal("]")})})});
    g.define(v, g.choice({obj, arr, string(g), number(g), g.literal("true"), g.literal("false"), g.literal("null")}));
    g.impl().shared.emplace("json.object", obj);
    return v;
  });
}

Node object(GrammarBuilder& g) {
  value(g);
  return g.impl().shared.at("json.object");
}

Node format(GrammarBuilder& g, std::string_view name) {
  if (name == "date") return g.impl().memo("json.format.date", [&] { return quoted(g, full_date(g)); });
  if (name == "time") return g.impl().memo("json.format.time", [&] { return quoted(g, full_time(g)); });
  if (name == "date-time")
    return g.impl().memo("json.format.date-time",
                         [&] { return quoted(g, g.sequence({full_date(g), g.literal("T"), full_time(g)})); });
  if (name == "uuid") return g.impl().memo("json.format.uuid", [&] { return quoted(g, uuid(g)); });
  return -1;
}

}  // namespace qvl::json

namespace qvl {

GrammarBuilder::Node GrammarBuilder::json_value() { return json::value(*this); }
GrammarBuilder::Node GrammarBuilder::json_object() { return json::object(*this); }

}  // namespace qvl
