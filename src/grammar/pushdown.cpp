// Closure and advance over pushdown stacks (see pushdown.h).
#include "grammar/pushdown.h"

#include <algorithm>
#include <map>
#include <utility>

namespace qvl {
namespace {

using Stack = std::vector<uint32_t>;

// Expands `s` until its top is a byte set (or it is empty), adding every
// outcome to `out`. A rule reference whose continuation is the end of its
// alternative is a tail call: no return position is pushed, so
// right-recursive repetition keeps the stack flat. Terminates because
// lower_grammar() refuses left recursion.
void closure(const Grammar& g, Stack s, std::vector<Stack>& out) {
  std::vector<Stack> work{std::move(s)};
  while (!work.empty()) {
    Stack t = std::move(work.back());
    work.pop_back();
    for (;;) {
      if (t.empty()) {
        out.push_back(std::move(t));
        break;
      }
      const uint32_t p = t.back();
      const uint32_t e = g.elems[p];
      if (e == Grammar::kEnd) {  // alternative finished: return to the caller
        t.pop_back();
        continue;
      }
      if (!Grammar::is_rule(e)) {
        out.push_back(std::move(t));
        break;
      }
      const uint32_t r = Grammar::index(e);
      if (g.elems[p + 1] == Grammar::kEnd) t.pop_back();
      else t.back() = p + 1;
      const uint32_t first = g.alt_begin[r], last = g.alt_begin[r + 1];
      if (first == last) break;  // no alternative (pruned grammars have none such)
      for (uint32_t a = first + 1; a < last; ++a) {
        Stack u = t;
        u.push_back(g.alt_starts[a]);
        work.push_back(std::move(u));
      }
      t.push_back(g.alt_starts[first]);
    }
  }
}

Config encode(std::vector<Stack>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  Config c;
  for (const Stack& s : stacks) {
    c.push_back(static_cast<uint32_t>(s.size()));
    c.insert(c.end(), s.begin(), s.end());
  }
  return c;
}

}  // namespace

Config start_config(const Grammar& g) {
  std::vector<Stack> stacks;
  closure(g, Stack{g.start}, stacks);
  return encode(stacks);
}

Config advance(const Grammar& g, const Config& from, uint8_t byte) {
  std::vector<Stack> stacks;
  for (size_t i = 0; i < from.size(); i += from[i] + 1) {
    const uint32_t n = from[i];
    if (n == 0) continue;
    const uint32_t top = from[i + n];
    if (!g.set_has(Grammar::index(g.elems[top]), byte)) continue;
    Stack s(from.begin() + static_cast<ptrdiff_t>(i + 1), from.begin() + static_cast<ptrdiff_t>(i + 1 + n));
    s.back() = top + 1;
    closure(g, std::move(s), stacks);
  }
  return encode(stacks);
}

Successors advance_all(const Grammar& g, const Config& from) {
  std::vector<uint32_t> tops;  // each non-empty stack's top byte set
  for (size_t i = 0; i < from.size(); i += from[i] + 1)
    if (from[i] != 0) tops.push_back(Grammar::index(g.elems[from[i + from[i]]]));
  Successors out;
  std::map<std::vector<uint64_t>, int16_t> by_readers;
  for (int b = 0; b < 256; ++b) {
    std::vector<uint64_t> readers((tops.size() + 63) / 64, 0);
    bool any = false;
    for (size_t k = 0; k < tops.size(); ++k)
      if (g.set_has(tops[k], static_cast<uint8_t>(b))) readers[k >> 6] |= uint64_t{1} << (k & 63), any = true;
    if (!any) {
      out.group[b] = -1;
      continue;
    }
    auto [it, added] = by_readers.emplace(std::move(readers), static_cast<int16_t>(out.configs.size()));
    if (added) out.configs.push_back(advance(g, from, static_cast<uint8_t>(b)));
    out.group[b] = it->second;
  }
  return out;
}

bool config_complete(const Config& c) {
  for (size_t i = 0; i < c.size(); i += c[i] + 1)
    if (c[i] == 0) return true;
  return false;
}

bool config_live(const Config& c) {
  for (size_t i = 0; i < c.size(); i += c[i] + 1)
    if (c[i] != 0) return true;
  return false;
}

}  // namespace qvl
