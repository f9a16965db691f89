// GrammarBuilder: records nodes; build() hands them to lower_grammar().
#include "grammar/grammar_builder.h"

#include <algorithm>
#include <utility>

#include "util/error.h"

namespace qvl {

using Node = GrammarBuilder::Node;
using Kind = GrammarBuilder::Impl::NodeData::Kind;

namespace {
// A bounded repetition lowers to one rule per optional item; this keeps a
// typo (maxItems 1e9) from allocating gigabytes.
constexpr int kMaxRepeat = 1 << 16;
}  // namespace

Node GrammarBuilder::Impl::add(NodeData node) {
  nodes.push_back(std::move(node));
  return static_cast<Node>(nodes.size() - 1);
}

void GrammarBuilder::Impl::check(Node n) const {
  if (n < 0 || static_cast<size_t>(n) >= nodes.size()) fail("grammar: node ", n, " is not a node of this builder");
}

Node GrammarBuilder::Impl::memo(const std::string& key, const std::function<Node()>& make) {
  if (auto it = shared.find(key); it != shared.end()) return it->second;
  const Node n = make();
  shared.emplace(key, n);
  return n;
}

GrammarBuilder::GrammarBuilder() : impl_(std::make_unique<Impl>()) {}
GrammarBuilder::~GrammarBuilder() = default;
GrammarBuilder::GrammarBuilder(GrammarBuilder&&) noexcept = default;

Node GrammarBuilder::literal(std::string_view bytes) {
  Impl::NodeData d;
  d.kind = Kind::Literal;
  d.text = std::string(bytes);
  return impl_->add(std::move(d));
}

Node GrammarBuilder::bytes_in(std::vector<std::pair<uint8_t, uint8_t>> ranges) {
  Impl::NodeData d;
  d.kind = Kind::Bytes;
  for (auto [lo, hi] : ranges)
    for (int b = lo; b <= hi; ++b) d.set[b >> 6] |= uint64_t{1} << (b & 63);
  return impl_->add(std::move(d));
}

Node GrammarBuilder::sequence(std::vector<Node> items) {
  for (Node n : items) impl_->check(n);
  Impl::NodeData d;
  d.kind = Kind::Sequence;
  d.items = std::move(items);
  return impl_->add(std::move(d));
}

Node GrammarBuilder::choice(std::vector<Node> alternatives) {
  for (Node n : alternatives) impl_->check(n);
  Impl::NodeData d;
  d.kind = Kind::Choice;
  d.items = std::move(alternatives);
  return impl_->add(std::move(d));
}

Node GrammarBuilder::forward() {
  Impl::NodeData d;
  d.kind = Kind::Forward;
  return impl_->add(std::move(d));
}

void GrammarBuilder::define(Node forward, Node body) {
  impl_->check(forward);
  impl_->check(body);
  Impl::NodeData& d = impl_->nodes[static_cast<size_t>(forward)];
  if (d.kind != Kind::Forward) fail("grammar: define() needs a node made by forward()");
  if (d.body >= 0) fail("grammar: a forward node is defined twice");
  d.body = body;
}

// item (sep item){min-1 ..}: the items after the first are right-recursive
// tails, so matching N items keeps the pushdown stack flat (the tail call
// needs no return position) and every unbounded iteration reaches the same
// automaton state.
Node GrammarBuilder::repeat(Node item, int min, int max, Node separator) {
  impl_->check(item);
  if (separator >= 0) impl_->check(separator);
  if (min < 0 || (max >= 0 && max < min) || max < -1)
    fail("grammar: repeat needs 0 <= min <= max (or max -1), got ", min, "..", max);
  if (min > kMaxRepeat || max > kMaxRepeat) fail("grammar: repeat bounds above ", kMaxRepeat, " are not supported");
  if (max == 0) return literal("");
  const Node step = separator >= 0 ? sequence({separator, item}) : item;
  Node tail;  // what may follow the required items
  if (max < 0) {
    tail = forward();
    define(tail, choice({literal(""), sequence({step, tail})}));
  } else {
    tail = literal("");
    for (int k = std::max(min, 1); k < max; ++k) tail = choice({literal(""), sequence({step, tail})});
  }
  std::vector<Node> items{item};
  for (int k = 1; k < min; ++k) items.push_back(step);
  items.push_back(tail);
  const Node some = sequence(std::move(items));
  return min == 0 ? choice({literal(""), some}) : some;
}

std::shared_ptr<const Grammar> GrammarBuilder::build(Node root) {
  if (!impl_) fail("grammar: build() was already called on this builder");
  impl_->check(root);
  auto g = lower_grammar(*impl_, root);
  impl_.reset();
  return g;
}

}  // namespace qvl
