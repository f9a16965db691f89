// Lowering builder nodes to rules (Grammar, grammar_rules.h).
//
// A node becomes a list of alternatives, each a list of elements (byte sets
// and rule references). Small single-alternative nodes (literals, short
// sequences) are spliced into their users and a choice's alternatives are
// flattened into the enclosing choice, so the pushdown stacks stay shallow;
// every other node referenced from a sequence becomes a rule of its own.
// Afterwards alternatives that can never finish are pruned (so a matcher
// never walks into a dead end) and left recursion is refused (the closure
// over rule references would not terminate).
#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "grammar/grammar_builder.h"
#include "util/error.h"

namespace qvl {
namespace {

using Node = GrammarBuilder::Node;
using Kind = GrammarBuilder::Impl::NodeData::Kind;
using Alt = std::vector<uint32_t>;  // elements, encoded as in Grammar
using Alts = std::vector<Alt>;

constexpr size_t kSpliceElems = 32;  // a single alternative up to this long is copied into its users
constexpr size_t kSpliceAlts = 64;   // a choice of up to this many alternatives is flattened into its user

class Lowering {
 public:
  explicit Lowering(const GrammarBuilder::Impl& b) : b_(b), memo_(b.nodes.size()), rule_of_node_(b.nodes.size(), -1) {}

  std::shared_ptr<const Grammar> run(Node root) {
    const uint32_t root_rule = rule_of(root);
    while (!pending_.empty()) {
      const uint32_t r = pending_.back();
      pending_.pop_back();
      const auto& d = b_.nodes[static_cast<size_t>(rule_node_[r])];
      if (d.kind == Kind::Forward && d.body < 0) fail("grammar: a forward node was never defined");
      Alts alts = expand(d.kind == Kind::Forward ? d.body : rule_node_[r]);
      rules_[r] = std::move(alts);
    }
    prune(root_rule);
    refuse_left_recursion();
    return layout(root_rule);
  }

 private:
  uint32_t set_id(const Grammar::ByteSet& s) {
    auto [it, added] = set_ids_.emplace(s, static_cast<uint32_t>(sets_.size()));
    if (added) sets_.push_back(s);
    return it->second;
  }

  uint32_t rule_of(Node n) {
    int32_t& r = rule_of_node_[static_cast<size_t>(n)];
    if (r < 0) {
      r = static_cast<int32_t>(rules_.size());
      rules_.emplace_back();
      rule_node_.push_back(n);
      pending_.push_back(static_cast<uint32_t>(r));
    }
    return static_cast<uint32_t>(r);
  }

  // The alternatives of node n (memoized; the memo is never resized, so the
  // reference stays valid while deeper nodes are expanded).
  const Alts& expand(Node n) {
    std::optional<Alts>& m = memo_[static_cast<size_t>(n)];
    if (m) return *m;
    const auto& d = b_.nodes[static_cast<size_t>(n)];
    Alts out;
    switch (d.kind) {
      case Kind::Bytes:
        if (d.set != Grammar::ByteSet{}) out.push_back({Grammar::byte_elem(set_id(d.set))});
        break;  // an empty set matches nothing: no alternative
      case Kind::Literal: {
        Alt a;
        for (unsigned char c : d.text) {
          Grammar::ByteSet s{};
          s[c >> 6] |= uint64_t{1} << (c & 63);
          a.push_back(Grammar::byte_elem(set_id(s)));
        }
        out.push_back(std::move(a));
        break;
      }
      case Kind::Forward:
        out.push_back({Grammar::rule_elem(rule_of(n))});
        break;
      case Kind::Sequence: {
        Alt a;
        bool nothing = false;
        for (Node item : d.items) {
          const Alts& x = expand(item);
          if (x.empty()) nothing = true;
          else if (x.size() == 1 && x[0].size() <= kSpliceElems) a.insert(a.end(), x[0].begin(), x[0].end());
          else a.push_back(Grammar::rule_elem(rule_of(item)));
        }
        if (!nothing) out.push_back(std::move(a));
        break;
      }
      case Kind::Choice: {
        for (Node item : d.items) {
          const Alts& x = expand(item);
          bool small = x.size() <= kSpliceAlts;
          for (const Alt& a : x) small = small && a.size() <= kSpliceElems;
          if (small) out.insert(out.end(), x.begin(), x.end());
          else out.push_back({Grammar::rule_elem(rule_of(item))});
        }
        // Identical alternatives would only duplicate every matcher stack.
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        break;
      }
    }
    m = std::move(out);
    return *m;
  }

  // Keeps the alternatives whose every element can finish; throws if the
  // root cannot.
  void prune(uint32_t root) {
    std::vector<char> productive(rules_.size(), 0);
    auto elem_ok = [&](uint32_t e) { return !Grammar::is_rule(e) || productive[Grammar::index(e)]; };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules_.size(); ++r) {
        if (productive[r]) continue;
        for (const Alt& a : rules_[r])
          if (std::all_of(a.begin(), a.end(), elem_ok)) {
            productive[r] = 1;
            changed = true;
            break;
          }
      }
    }
    if (!productive[root]) fail("grammar: the grammar matches no text at all");
    for (Alts& alts : rules_)
      std::erase_if(alts, [&](const Alt& a) { return !std::all_of(a.begin(), a.end(), elem_ok); });
  }

  void refuse_left_recursion() {
    std::vector<char> nullable(rules_.size(), 0);
    auto elem_nullable = [&](uint32_t e) { return Grammar::is_rule(e) && nullable[Grammar::index(e)]; };
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < rules_.size(); ++r)
        if (!nullable[r])
          for (const Alt& a : rules_[r])
            if (std::all_of(a.begin(), a.end(), elem_nullable)) {
              nullable[r] = 1;
              changed = true;
              break;
            }
    }
    // Rule r "calls first" rule s when s can be entered before any byte is read.
    std::vector<std::vector<uint32_t>> first(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r)
      for (const Alt& a : rules_[r])
        for (uint32_t e : a) {
          if (!Grammar::is_rule(e)) break;
          first[r].push_back(Grammar::index(e));
          if (!nullable[Grammar::index(e)]) break;
        }
    // Iterative DFS for a cycle (0 new, 1 on the path, 2 done).
    std::vector<char> color(rules_.size(), 0);
    for (size_t start = 0; start < rules_.size(); ++start) {
      if (color[start]) continue;
      std::vector<std::pair<uint32_t, size_t>> path{{static_cast<uint32_t>(start), 0}};
      color[start] = 1;
      while (!path.empty()) {
        auto& [r, k] = path.back();
        if (k == first[r].size()) {
          color[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t s = first[r][k++];
        if (color[s] == 1) fail("grammar: the grammar is left-recursive (a rule can reach itself before reading a byte)");
        if (color[s] == 0) {
          color[s] = 1;
          path.emplace_back(s, 0);
        }
      }
    }
  }

  std::shared_ptr<const Grammar> layout(uint32_t root) {
    auto g = std::make_shared<Grammar>();
    g->start = 0;
    g->elems = {Grammar::rule_elem(root), Grammar::kEnd};
    for (const Alts& alts : rules_) {
      g->alt_begin.push_back(static_cast<uint32_t>(g->alt_starts.size()));
      for (const Alt& a : alts) {
        g->alt_starts.push_back(static_cast<uint32_t>(g->elems.size()));
        g->elems.insert(g->elems.end(), a.begin(), a.end());
        g->elems.push_back(Grammar::kEnd);
      }
    }
    g->alt_begin.push_back(static_cast<uint32_t>(g->alt_starts.size()));
    g->sets = std::move(sets_);
    return g;
  }

  const GrammarBuilder::Impl& b_;
  std::vector<std::optional<Alts>> memo_;  // [nodes]
  std::vector<int32_t> rule_of_node_;      // [nodes]: its rule, or -1
  std::vector<Node> rule_node_;            // [rules]: the node it stands for
  std::vector<Alts> rules_;                // [rules]
  std::vector<uint32_t> pending_;          // rules whose alternatives are not expanded yet
  std::map<Grammar::ByteSet, uint32_t> set_ids_;
  std::vector<Grammar::ByteSet> sets_;
};

}  // namespace

std::shared_ptr<const Grammar> lower_grammar(const GrammarBuilder::Impl& nodes, Node root) {
  return Lowering(nodes).run(root);
}

}  // namespace qvl
