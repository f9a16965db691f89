// Test and benchmark schemas: the invoice of the performance targets and the
// shapes the random-generation test covers.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace qvl::test {

inline const char* const kInvoiceSchema = R"({
  "type": "object",
  "properties": {
    "invoice_number": {"type": "string"},
    "date": {"type": "string", "format": "date"},
    "vendor": {"type": "object", "properties": {"name": {"type": "string"}, "address": {"type": "string"}},
               "required": ["name"]},
    "line_items": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
        "description": {"type": "string"}, "quantity": {"type": "integer"}, "unit_price": {"type": "number"}},
        "required": ["description", "quantity", "unit_price"], "additionalProperties": false}},
    "subtotal": {"type": "number"},
    "tax": {"type": "number"},
    "total": {"type": "number"},
    "currency": {"enum": ["USD", "EUR", "GBP"]},
    "paid": {"type": "boolean"},
    "notes": {"type": ["string", "null"]}
  },
  "required": ["invoice_number", "date", "vendor", "line_items", "subtotal", "tax", "total", "currency", "paid", "notes"],
  "additionalProperties": false
})";

// {name, schema}
inline std::vector<std::pair<std::string, std::string>> generation_schemas() {
  return {
      {"invoice", kInvoiceSchema},
      {"nested_arrays", R"({"type":"array","minItems":1,"maxItems":4,
          "items":{"type":"array","maxItems":3,"items":{"type":"integer"}}})"},
      {"any_of", R"({"anyOf":[{"type":"string","format":"uuid"},
          {"type":"object","properties":{"kind":{"const":"point"},"x":{"type":"number"},"y":{"type":"number"}},
           "required":["kind","x","y"]},
          {"type":"null"}]})"},
      {"one_of_tagged", R"({"type":"object","properties":{"shape":{"oneOf":[
          {"type":"object","properties":{"t":{"const":"circle"},"r":{"type":"number"}},"required":["t","r"]},
          {"type":"object","properties":{"t":{"const":"rect"},"w":{"type":"integer"},"h":{"type":"integer"}},"required":["t","w","h"]}
          ]}},"required":["shape"]})"},
      {"ref_tree", R"({"$defs":{"node":{"type":"object","properties":{"name":{"type":"string","maxLength":12},
          "children":{"type":"array","maxItems":3,"items":{"$ref":"#/$defs/node"}}},"required":["name"]}},
          "$ref":"#/$defs/node"})"},
      {"enums", R"({"type":"object","properties":{"color":{"enum":["red","green","blue",null,1,{"a":[1,2]}]},
          "size":{"type":"string","enum":["S","M","L","XL"]},"flag":{"const":true}},"required":["color","size"]})"},
      {"formats", R"({"type":"object","properties":{"d":{"type":"string","format":"date"},
          "dt":{"type":"string","format":"date-time"},"t":{"type":"string","format":"time"},
          "id":{"type":"string","format":"uuid"}},"required":["d","dt","t","id"]})"},
      {"all_optional", R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},
          "c":{"type":"string"},"d":{"type":"null"}}})"},
      {"any_value", "{}"},
      {"bounds", R"({"type":"object","properties":{
          "stars":{"type":"integer","minimum":1,"maximum":5},
          "count":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},
          "ratio":{"type":"number","exclusiveMinimum":0,"maximum":1},
          "delta":{"type":"number","minimum":-40,"exclusiveMaximum":-3},
          "year":{"type":"integer","minimum":1900,"maximum":2100}},
          "required":["stars","count","ratio","delta","year"],"additionalProperties":false})"},
      {"tuple_lengths", R"({"type":"array","prefixItems":[{"type":"string","minLength":2,"maxLength":5},{"type":"number"},
          {"type":"boolean"}],"items":false,"minItems":2})"},
      {"map_of_lists", R"({"type":"object","additionalProperties":{"type":"array","maxItems":2,
          "items":{"type":"string","maxLength":8}}})"},
      {"tool_args", R"({"type":"object","properties":{"query":{"type":"string","minLength":1},
          "filters":{"type":"object","properties":{"since":{"type":["string","null"],"format":"date"},
          "limit":{"type":"integer"}},"required":["limit"]},"tags":{"type":"array","items":{"type":"string"}}},
          "required":["query","filters"],"additionalProperties":false,"definitions":{}})"},
  };
}

}  // namespace qvl::test
