// json_schema(): what each supported keyword admits, and the FieldError
// (field path ending in the keyword) for everything refused.
#include <gtest/gtest.h>

#include "match.h"
#include "util/error.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;
using test::ByteMatcher;

const std::string kField = "response_format.json_schema.schema";

ByteMatcher schema_matcher(const char* schema) {
  GrammarBuilder b;
  return ByteMatcher(b.build(b.json_schema(ojson::parse(schema), kField)));
}

// The FieldError's field for a refused schema ("" if it was accepted).
std::string refusal(const char* schema) {
  GrammarBuilder b;
  try {
    b.build(b.json_schema(ojson::parse(schema), kField));
  } catch (const FieldError& e) {
    EXPECT_NE(std::string(e.what()).find(e.field()), std::string::npos) << "the message names the field: " << e.what();
    return e.field();
  }
  return "";
}

TEST(JsonSchema, ObjectPropertiesInOrderWithOptionals) {
  const ByteMatcher m = schema_matcher(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
      "c":{"type":"boolean"}},"required":["b"]})");
  for (const char* ok : {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a": -3, "b": "x", "c": true})", R"({"b":"","c":false})"})
    EXPECT_TRUE(m.matches(ok)) << ok;
  for (const char* bad : {R"({})", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":"x","d":1})", R"({"a":1.5,"b":"x"})",
                          R"({,"b":"x"})", R"({"b":"x",})", R"({"a":1,,"b":"x"})", R"({"b":"x","c":true,"c":true})",
                          R"({"b":1})"})
    EXPECT_FALSE(m.matches(bad)) << bad;
}

TEST(JsonSchema, AllOptionalCommasInEveryCombination) {
  const ByteMatcher m = schema_matcher(R"({"properties":{"a":{"const":1},"b":{"const":2},"c":{"const":3}}, "type":"object"})");
  const char* keys[] = {"\"a\":1", "\"b\":2", "\"c\":3"};
  for (int mask = 0; mask < 8; ++mask) {
    std::string text = "{";
    for (int i = 0; i < 3; ++i)
      if (mask >> i & 1) text += (text.size() > 1 ? "," : "") + std::string(keys[i]);
    text += "}";
    EXPECT_TRUE(m.matches(text)) << text;
    EXPECT_FALSE(m.matches(text.substr(0, text.size() - 1) + ",}")) << text;
  }
}

TEST(JsonSchema, EmptyAndTrueSchemasAreAnyValue) {
  for (const char* s : {"{}", "true", R"({"description":"anything","title":"t"})"}) {
    const ByteMatcher m = schema_matcher(s);
    EXPECT_TRUE(m.matches(R"({"x":[1,"y",null]})"));
    EXPECT_TRUE(m.matches("12.5e3"));
    EXPECT_FALSE(m.matches("{x}"));
  }
}

TEST(JsonSchema, ObjectsWithoutProperties) {
  const ByteMatcher any = schema_matcher(R"({"type":"object"})");
  EXPECT_TRUE(any.matches(R"({"q":{"r":[]}})"));
  EXPECT_FALSE(any.matches("[]"));
  const ByteMatcher none = schema_matcher(R"({"type":"object","additionalProperties":false})");
  EXPECT_TRUE(none.matches("{}"));
  EXPECT_FALSE(none.matches(R"({"a":1})"));
  const ByteMatcher map = schema_matcher(R"({"type":"object","additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(map.matches(R"({"a":1, "b":2})"));
  EXPECT_TRUE(map.matches("{}"));
  EXPECT_FALSE(map.matches(R"({"a":"1"})"));
}

// Beside 'properties', extra properties may be allowed but are never
// required: qvl writes the declared ones only, which is valid either way.
TEST(JsonSchema, AdditionalPropertiesBesidePropertiesWritesTheDeclaredOnes) {
  for (const char* ap : {"true", R"({"type":"integer"})"}) {
    const std::string schema = std::string(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":)") + ap + "}";
    const ByteMatcher m = schema_matcher(schema.c_str());
    EXPECT_TRUE(m.matches(R"({"a":1})")) << ap;
    EXPECT_FALSE(m.matches(R"({"a":1,"b":2})")) << ap;
  }
}

TEST(JsonSchema, TypesEnumsConst) {
  const ByteMatcher t = schema_matcher(R"({"type":["string","null"]})");
  EXPECT_TRUE(t.matches("null"));
  EXPECT_TRUE(t.matches("\"s\""));
  EXPECT_FALSE(t.matches("1"));
  const ByteMatcher e = schema_matcher(R"({"enum":["USD","EUR",1,null,{"a":[1, 2]},"\u00e9\n"]})");
  for (const char* ok : {"\"USD\"", "\"EUR\"", "1", "null", R"({"a":[1,2]})", "\"\xc3\xa9\\n\""}) EXPECT_TRUE(e.matches(ok)) << ok;
  for (const char* bad : {"\"GBP\"", "\"US\"", "2", R"({"a":[1, 2]})", "\"\\u00e9\\n\""}) EXPECT_FALSE(e.matches(bad)) << bad;
  const ByteMatcher filtered = schema_matcher(R"({"type":"string","enum":["a",1,"b"]})");
  EXPECT_TRUE(filtered.matches("\"a\""));
  EXPECT_FALSE(filtered.matches("1"));
  const ByteMatcher c = schema_matcher(R"({"const":{"k":"v"}})");
  EXPECT_TRUE(c.matches(R"({"k":"v"})"));
  EXPECT_FALSE(c.matches(R"({"k": "v"})"));  // listed values are spelled compactly
  const ByteMatcher i = schema_matcher(R"({"type":"integer"})");
  EXPECT_TRUE(i.matches("-120"));
  EXPECT_FALSE(i.matches("1.0"));
  EXPECT_FALSE(i.matches("1e3"));
  EXPECT_FALSE(i.matches("007"));
  const ByteMatcher n = schema_matcher(R"({"type":["integer","number"]})");
  EXPECT_TRUE(n.matches("1.5E-3"));
  const ByteMatcher b = schema_matcher(R"({"type":"boolean"})");
  EXPECT_TRUE(b.matches("false"));
  EXPECT_FALSE(b.matches("0"));
}

TEST(JsonSchema, Arrays) {
  const ByteMatcher m = schema_matcher(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_FALSE(m.matches("[]"));
  EXPECT_FALSE(m.matches("[1]"));
  EXPECT_TRUE(m.matches("[1,2]"));
  EXPECT_TRUE(m.matches("[1, 2, 3]"));
  EXPECT_FALSE(m.matches("[1,2,3,4]"));
  EXPECT_FALSE(m.matches("[1,\"2\"]"));
  const ByteMatcher any = schema_matcher(R"({"type":"array"})");
  EXPECT_TRUE(any.matches("[]"));
  EXPECT_TRUE(any.matches(R"([1,"a",[{}]])"));
  const ByteMatcher many = schema_matcher(R"({"type":"array","items":{"const":0},"minItems":3})");
  EXPECT_FALSE(many.matches("[0,0]"));
  EXPECT_TRUE(many.matches("[0,0,0,0,0,0,0,0]"));
  const ByteMatcher tuple = schema_matcher(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],
      "items":false,"minItems":1})");
  EXPECT_TRUE(tuple.matches(R"(["a"])"));
  EXPECT_TRUE(tuple.matches(R"(["a", 2])"));
  EXPECT_FALSE(tuple.matches(R"(["a",2,3])"));
  EXPECT_FALSE(tuple.matches(R"([2])"));
  EXPECT_FALSE(tuple.matches(R"([])"));
  const ByteMatcher open = schema_matcher(R"({"type":"array","prefixItems":[{"type":"null"}],"items":{"type":"boolean"}})");
  EXPECT_TRUE(open.matches("[null,true,false]"));
  EXPECT_FALSE(open.matches("[true]"));
  EXPECT_TRUE(open.matches("[]"));
}

TEST(JsonSchema, StringLengthsCountCodePoints) {
  const ByteMatcher m = schema_matcher(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_FALSE(m.matches("\"a\""));
  EXPECT_TRUE(m.matches("\"ab\""));
  EXPECT_TRUE(m.matches("\"\xc3\xa9\xe2\x82\xac\\n\""));      // three code points, six bytes
  EXPECT_TRUE(m.matches("\"\\ud83d\\ude00x\""));                // a surrogate pair escape is one code point
  EXPECT_FALSE(m.matches("\"abcd\""));
  const ByteMatcher min = schema_matcher(R"({"type":"string","minLength":1})");
  EXPECT_FALSE(min.matches("\"\""));
  EXPECT_TRUE(min.matches("\"a long enough string\""));
}

TEST(JsonSchema, Formats) {
  const ByteMatcher d = schema_matcher(R"({"type":"string","format":"date"})");
  EXPECT_TRUE(d.matches("\"2024-02-29\""));
  EXPECT_TRUE(d.matches("\"1999-12-31\""));
  for (const char* bad : {"\"2024-13-01\"", "\"2024-00-10\"", "\"2024-01-32\"", "\"2024-1-01\"", "\"24-01-01\"", "\"2024-01-00\""})
    EXPECT_FALSE(d.matches(bad)) << bad;
  const ByteMatcher dt = schema_matcher(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(dt.matches("\"2024-05-06T07:08:09Z\""));
  EXPECT_TRUE(dt.matches("\"2024-05-06T23:59:60.123+05:30\""));
  EXPECT_FALSE(dt.matches("\"2024-05-06 07:08:09Z\""));
  EXPECT_FALSE(dt.matches("\"2024-05-06T24:00:00Z\""));
  EXPECT_FALSE(dt.matches("\"2024-05-06T07:08:09\""));
  const ByteMatcher t = schema_matcher(R"({"type":"string","format":"time"})");
  EXPECT_TRUE(t.matches("\"07:08:09-01:00\""));
  EXPECT_FALSE(t.matches("\"07:60:09Z\""));
  const ByteMatcher u = schema_matcher(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(u.matches("\"123e4567-e89b-12d3-A456-426614174000\""));
  EXPECT_FALSE(u.matches("\"123e4567e89b12d3a456426614174000\""));
  EXPECT_FALSE(u.matches("\"123e4567-e89b-12d3-a456-42661417400g\""));
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  const ByteMatcher m = schema_matcher(R"({"anyOf":[{"type":"integer"},{"type":"object","properties":{"k":{"const":"v"}},
      "required":["k"]}]})");
  EXPECT_TRUE(m.matches("5"));
  EXPECT_TRUE(m.matches(R"({"k":"v"})"));
  EXPECT_FALSE(m.matches("\"5\""));
  const ByteMatcher o = schema_matcher(R"({"oneOf":[{"type":"null"},{"type":"boolean"}]})");
  EXPECT_TRUE(o.matches("true"));
  EXPECT_FALSE(o.matches("1"));
  const ByteMatcher a = schema_matcher(R"({"allOf":[{"type":"string","format":"uuid"}],"description":"an id"})");
  EXPECT_TRUE(a.matches("\"00000000-0000-0000-0000-000000000000\""));
  EXPECT_FALSE(a.matches("\"x\""));
}

TEST(JsonSchema, RefsAndRecursion) {
  const ByteMatcher tree = schema_matcher(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(tree.matches(R"({"v":1})"));
  EXPECT_TRUE(tree.matches(R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(tree.matches(R"({"v":1,"kids":[{"kids":[]}]})"));
  const ByteMatcher root = schema_matcher(R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})");
  EXPECT_TRUE(root.matches("[1,[2,[[]]],3]"));
  EXPECT_FALSE(root.matches("[1,[\"a\"]]"));
  const ByteMatcher old = schema_matcher(R"({"definitions":{"a/b":{"type":"null"}},"properties":{"x":{"$ref":"#/definitions/a~1b"}},
      "required":["x"],"type":"object"})");
  EXPECT_TRUE(old.matches(R"({"x":null})"));
}

// Bounds become digit-by-digit alternatives: every integer from -1200 to
// 1200 (and decimals around the ends) is accepted exactly when it is in range.
TEST(JsonSchema, IntegerBoundsAdmitExactlyTheRange) {
  struct Case {
    const char* schema;
    int64_t lo, hi;  // inclusive
  };
  const Case cases[] = {
      {R"({"type":"integer","minimum":0,"maximum":10})", 0, 10},
      {R"({"type":"integer","minimum":-37,"maximum":905})", -37, 905},
      {R"({"type":"integer","exclusiveMinimum":-5,"exclusiveMaximum":120})", -4, 119},
      {R"({"type":"integer","minimum":99,"maximum":1001})", 99, 1001},
      {R"({"type":"integer","minimum":-1000,"maximum":-17})", -1000, -17},
      {R"({"type":"integer","minimum":7})", 7, INT64_MAX},
      {R"({"type":"integer","maximum":-3})", INT64_MIN, -3},
      {R"({"type":"integer","minimum":2.5,"maximum":9.9})", 3, 9},
      {R"({"type":"integer","minimum":3,"exclusiveMinimum":true})", 4, INT64_MAX},  // draft 4's boolean form
  };
  for (const Case& c : cases) {
    const ByteMatcher m = schema_matcher(c.schema);
    for (int64_t v = -1200; v <= 1200; ++v)
      ASSERT_EQ(m.matches(std::to_string(v)), v >= c.lo && v <= c.hi) << c.schema << " at " << v;
    EXPECT_FALSE(m.matches("01")) << c.schema;
    EXPECT_FALSE(m.matches("1.5")) << c.schema;
  }
  // zod writes every z.number().int() with the safe-integer range.
  const ByteMatcher safe = schema_matcher(R"({"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991})");
  EXPECT_TRUE(safe.matches("9007199254740991"));
  EXPECT_TRUE(safe.matches("-9007199254740991"));
  EXPECT_FALSE(safe.matches("9007199254740992"));
  EXPECT_FALSE(safe.matches("-9007199254740992"));
  EXPECT_TRUE(safe.matches("0"));
  EXPECT_FALSE(safe.matches("-0"));
}

TEST(JsonSchema, NumberBoundsAdmitExactlyTheRange) {
  const ByteMatcher m = schema_matcher(R"({"type":"number","minimum":-2,"exclusiveMaximum":10})");
  for (const char* yes : {"-2", "-2.0", "-1.999", "0", "0.5", "-0.5", "9.999", "9", "3.14159"})
    EXPECT_TRUE(m.matches(yes)) << yes;
  for (const char* no : {"-2.001", "-3", "10", "10.0", "10.5", "11", "1e1", "01"}) EXPECT_FALSE(m.matches(no)) << no;
  const ByteMatcher positive = schema_matcher(R"({"type":"number","exclusiveMinimum":0,"maximum":1})");
  for (const char* yes : {"0.1", "0.001", "1", "1.00", "0.99"}) EXPECT_TRUE(positive.matches(yes)) << yes;
  for (const char* no : {"0", "0.0", "0.000", "-0.5", "1.01", "2", "-0"}) EXPECT_FALSE(positive.matches(no)) << no;
}

TEST(JsonSchema, RefusesUnsupportedKeywordsNamingThem) {
  const std::string f = kField;
  EXPECT_EQ(refusal(R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}})"),
            f + ".properties.zip.pattern");
  EXPECT_EQ(refusal(R"({"type":"number","minimum":0.5})"), f + ".minimum");
  EXPECT_EQ(refusal(R"({"type":"number","exclusiveMaximum":2.25})"), f + ".exclusiveMaximum");
  EXPECT_EQ(refusal(R"({"type":"integer","minimum":"3"})"), f + ".minimum");
  EXPECT_EQ(refusal(R"({"type":"integer","minimum":5,"maximum":4})"), f + ".maximum");
  EXPECT_EQ(refusal(R"({"type":"integer","multipleOf":2})"), f + ".multipleOf");
  EXPECT_EQ(refusal(R"({"type":"object","patternProperties":{"a":{}}})"), f + ".patternProperties");
  EXPECT_EQ(refusal(R"({"type":"object","propertyNames":{"maxLength":3}})"), f + ".propertyNames");
  EXPECT_EQ(refusal(R"({"if":{},"then":{}})"), f + ".if");
  EXPECT_EQ(refusal(R"({"not":{"type":"null"}})"), f + ".not");
  EXPECT_EQ(refusal(R"({"type":"object","dependentRequired":{}})"), f + ".dependentRequired");
  EXPECT_EQ(refusal(R"({"type":"array","uniqueItems":true})"), f + ".uniqueItems");
  EXPECT_EQ(refusal(R"({"type":"array","contains":{}})"), f + ".contains");
  EXPECT_EQ(refusal(R"({"type":"object","unevaluatedProperties":false})"), f + ".unevaluatedProperties");
  EXPECT_EQ(refusal(R"({"type":"object","minProperties":1})"), f + ".minProperties");
  EXPECT_EQ(refusal(R"({"type":"object","maxProperties":1})"), f + ".maxProperties");
  EXPECT_EQ(refusal(R"({"type":"string","strict":true})"), f + ".strict");
  EXPECT_EQ(refusal(R"({"anyOf":[{"type":"string"},{"type":"string","format":"email"}]})"), f + ".anyOf[1].format");
  EXPECT_EQ(refusal(R"({"items":{"nullable":true},"type":"array"})"), f + ".items.nullable");
  EXPECT_EQ(refusal(R"({"$ref":"https://example.com/s.json"})"), f + ".$ref");
  EXPECT_EQ(refusal(R"({"$ref":"#/$defs/missing"})"), f + ".$ref");
  EXPECT_EQ(refusal(R"({"$ref":"#/properties/a"})"), f + ".$ref");
  EXPECT_EQ(refusal(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"), f + ".$defs.a.$ref");
  EXPECT_EQ(refusal(R"({"anyOf":[{"type":"null"},{"$ref":"#"}]})"), f + ".anyOf[1].$ref");
  EXPECT_EQ(refusal(R"({"allOf":[{"type":"string"},{"minLength":1}]})"), f + ".allOf");
  EXPECT_EQ(refusal(R"({"$ref":"#","type":"object"})"), f + ".type");
  EXPECT_EQ(refusal(R"({"enum":["a"],"minLength":1})"), f + ".minLength");
  EXPECT_EQ(refusal(R"({"type":"string","maxLength":100000})"), f + ".maxLength");
  EXPECT_EQ(refusal(R"({"type":"string","format":"date","maxLength":10})"), f + ".maxLength");
  // The schema still names every refusal at the keyword, however deep.
  EXPECT_EQ(refusal(R"({"$defs":{"p":{"type":"object","properties":{"q":{"type":"array","items":{"multipleOf":1}}}}},
      "properties":{"x":{"$ref":"#/$defs/p"}},"type":"object"})"),
            f + ".$defs.p.properties.q.items.multipleOf");
}

TEST(JsonSchema, RefusesMalformedKeywordValues) {
  const std::string f = kField;
  EXPECT_EQ(refusal("false"), f);
  EXPECT_EQ(refusal("[1]"), f);
  EXPECT_EQ(refusal(R"({"type":"strin"})"), f + ".type");
  EXPECT_EQ(refusal(R"({"type":[]})"), f + ".type");
  EXPECT_EQ(refusal(R"({"type":"object","properties":[]})"), f + ".properties");
  EXPECT_EQ(refusal(R"({"type":"object","properties":{"a":{}},"required":"a"})"), f + ".required");
  EXPECT_EQ(refusal(R"({"type":"object","properties":{"a":{}},"required":[1]})"), f + ".required");
  EXPECT_EQ(refusal(R"({"type":"object","properties":{"a":{}},"required":["b"]})"), f + ".required");
  EXPECT_EQ(refusal(R"({"type":"array","minItems":3,"maxItems":2})"), f + ".maxItems");
  EXPECT_EQ(refusal(R"({"type":"array","minItems":-1})"), f + ".minItems");
  EXPECT_EQ(refusal(R"({"type":"array","minItems":"1"})"), f + ".minItems");
  EXPECT_EQ(refusal(R"({"type":"array","items":[{}]})"), f + ".items");
  EXPECT_EQ(refusal(R"({"type":"array","prefixItems":[{}],"items":false,"minItems":2})"), f + ".minItems");
  EXPECT_EQ(refusal(R"({"type":"string","minLength":5,"maxLength":2})"), f + ".maxLength");
  EXPECT_EQ(refusal(R"({"enum":[]})"), f + ".enum");
  EXPECT_EQ(refusal(R"({"enum":"a"})"), f + ".enum");
  EXPECT_EQ(refusal(R"({"type":"integer","enum":["a"]})"), f + ".enum");
  EXPECT_EQ(refusal(R"({"anyOf":[]})"), f + ".anyOf");
  EXPECT_EQ(refusal(R"({"properties":{"a":false},"type":"object"})"), f + ".properties.a");
  EXPECT_EQ(refusal(R"({"type":"object","additionalProperties":3})"), f + ".additionalProperties");
  EXPECT_EQ(refusal(R"({"type":"string","format":7})"), f + ".format");
  EXPECT_EQ(refusal(R"({"$defs":[]})"), f + ".$defs");
}

TEST(JsonSchema, AcceptsAnnotations) {
  EXPECT_EQ(refusal(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","title":"T","description":"d",
      "$comment":"c","default":1,"examples":[1],"deprecated":false,"readOnly":true,"writeOnly":false,"type":"integer"})"),
            "");
  EXPECT_EQ(refusal(R"({"type":"array","uniqueItems":false})"), "");
}

}  // namespace
}  // namespace qvl
