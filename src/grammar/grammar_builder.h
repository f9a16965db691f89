// What a GrammarBuilder records before build() lowers it (grammar_lower.cpp).
// Internal to src/grammar: the JSON and JSON Schema expanders reach it through
// GrammarBuilder::impl() to share their sub-grammars.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_rules.h"

namespace qvl {

struct GrammarBuilder::Impl {
  struct NodeData {
    enum class Kind { Bytes, Literal, Sequence, Choice, Forward };
    Kind kind = Kind::Literal;
    Grammar::ByteSet set{};    // Bytes
    std::string text;          // Literal
    std::vector<Node> items;   // Sequence, Choice
    Node body = -1;            // Forward, once defined
  };

  std::vector<NodeData> nodes;
  // Sub-grammars used many times (a JSON string, any JSON value) are made
  // once per builder and shared, so they lower to one set of rules.
  std::map<std::string, Node, std::less<>> shared;

  Node add(NodeData node);
  void check(Node n) const;  // throws if `n` is not a node of this builder
  // The node registered under `key`, made by `make` on first use.
  Node memo(const std::string& key, const std::function<Node()>& make);
};

// Lowers the recorded nodes (rooted at `root`) to rules; see grammar_lower.cpp.
std::shared_ptr<const Grammar> lower_grammar(const GrammarBuilder::Impl& nodes, GrammarBuilder::Node root);

}  // namespace qvl
