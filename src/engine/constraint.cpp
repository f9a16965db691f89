#include "engine/constraint.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

bool constrained(const GenerateRequest& r) {
  return r.response_format.type != ResponseFormat::Type::Text || !r.tools.empty();
}

// Everything the grammars depend on, as one string.
std::string cache_key(const GenerateRequest& r) {
  std::string k = cat(static_cast<int>(r.response_format.type), '\x1f', r.response_format.schema, '\x1f',
                      static_cast<int>(r.tool_choice), '\x1f', r.tool_choice_name, '\x1f', r.parallel_tool_calls);
  for (const Tool& t : r.tools) k += cat('\x1e', t.name, '\x1f', t.parameters);
  return k;
}

ojson parse_schema(const std::string& text, const std::string& field) {
  try {
    return ojson::parse(text);
  } catch (const ojson::parse_error& e) {
    throw FieldError(field, cat("'", field, "' is not valid JSON (byte ", e.byte, ")"));
  }
}

// The tools a call may name: all of them, or the one tool_choice names.
std::vector<const Tool*> callable(const GenerateRequest& r) {
  std::vector<const Tool*> out;
  for (const Tool& t : r.tools)
    if (r.tool_choice != ToolChoice::Function || t.name == r.tool_choice_name) out.push_back(&t);
  if (out.empty())
    throw FieldError("tool_choice", cat("tool_choice names the function '", r.tool_choice_name,
                                        "', which is not among the request's tools"));
  return out;
}

// The part of a block after "<tool_call>": \n{"name": "N", "arguments": ARGS}\n</tool_call>
GrammarBuilder::Node call_body(GrammarBuilder& g, const GenerateRequest& r) {
  std::vector<GrammarBuilder::Node> calls;
  for (const Tool* t : callable(r)) {
    size_t index = static_cast<size_t>(t - r.tools.data());
    const std::string field = cat("tools[", index, "].function.parameters");
    const GrammarBuilder::Node args =
        t->parameters.empty() ? g.json_object() : g.json_schema(parse_schema(t->parameters, field), field);
    // The name as a JSON string's contents (dump escapes what needs it).
    const std::string quoted = ojson(t->name).dump();
    calls.push_back(g.sequence({g.literal(quoted.substr(1, quoted.size() - 2)), g.literal("\", \"arguments\": "), args}));
  }
  return g.sequence({g.literal("\n{\"name\": \""), g.choice(std::move(calls)), g.literal("}\n</tool_call>")});
}

GrammarBuilder::Node calls(GrammarBuilder& g, const GenerateRequest& r) {
  const GrammarBuilder::Node block = g.sequence({g.literal("<tool_call>"), call_body(g, r)});
  return g.repeat(block, 1, r.parallel_tool_calls ? -1 : 1, g.literal("\n"));
}

GrammarBuilder::Node response_value(GrammarBuilder& g, const GenerateRequest& r) {
  if (r.response_format.type == ResponseFormat::Type::JsonObject) return g.json_object();
  const std::string field = "response_format.json_schema.schema";
  return g.json_schema(parse_schema(r.response_format.schema, field), field);
}

}  // namespace

ConstraintCache::ConstraintCache(std::shared_ptr<const TokenVocab> vocab, size_t capacity)
    : vocab_(std::move(vocab)), capacity_(capacity) {}

std::shared_ptr<const Constraint> ConstraintCache::get(const GenerateRequest& r) {
  if (!constrained(r)) return nullptr;
  const std::string key = cache_key(r);
  {
    std::lock_guard lock(mutex_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it)
      if (it->first == key) {
        lru_.splice(lru_.begin(), lru_, it);
        return lru_.front().second;
      }
  }
  // Compiled outside the lock: a large schema does not hold up other requests.
  auto c = std::make_shared<Constraint>();
  const bool json = r.response_format.type != ResponseFormat::Type::Text;
  const bool tools = !r.tools.empty();
  const bool forced = tools && (r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Function);
  if (forced) {
    GrammarBuilder g;
    c->whole = TokenGrammar::create(g.build(calls(g, r)), vocab_);
  } else if (tools && r.tool_choice == ToolChoice::Auto) {
    if (json) {
      // Either calls or the value: both start unambiguously ('<' vs a JSON value).
      GrammarBuilder g;
      const GrammarBuilder::Node root = g.choice({calls(g, r), response_value(g, r)});
      c->whole = TokenGrammar::create(g.build(root), vocab_);
    } else {
      GrammarBuilder g;
      c->block = TokenGrammar::create(g.build(call_body(g, r)), vocab_);
    }
  } else {
    c->no_calls = tools;  // tool_choice none
    if (json) {
      GrammarBuilder g;
      c->whole = TokenGrammar::create(g.build(response_value(g, r)), vocab_);
    }
  }
  std::lock_guard lock(mutex_);
  lru_.emplace_front(key, c);
  if (lru_.size() > capacity_) lru_.pop_back();
  return c;
}

}  // namespace qvl
