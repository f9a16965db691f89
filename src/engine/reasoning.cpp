#include "engine/reasoning.h"

#include <algorithm>

namespace qvl {
namespace {

constexpr std::string_view kClose = "</think>";

// Length of the longest suffix of `s` that is a proper prefix of "</think>".
size_t partial_close(std::string_view s) {
  for (size_t n = std::min(s.size(), kClose.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == kClose.substr(0, n)) return n;
  return 0;
}

}  // namespace

void ReasoningSplitter::add_reasoning(std::string_view text, Pieces& out) {
  if (!reasoning_started_) {
    const size_t b = text.find_first_not_of('\n');
    if (b == std::string_view::npos) return;
    text.remove_prefix(b);
    reasoning_started_ = true;
  }
  out.reasoning.append(text);
}

void ReasoningSplitter::add_content(std::string_view text, Pieces& out) {
  if (!content_started_) {
    const size_t b = text.find_first_not_of('\n');
    if (b == std::string_view::npos) return;
    text.remove_prefix(b);
    content_started_ = true;
  }
  out.content.append(text);
}

ReasoningSplitter::Pieces ReasoningSplitter::push(std::string_view text) {
  Pieces out;
  if (!in_reasoning_) {
    add_content(text, out);
    return out;
  }
  std::string buf = std::move(held_);
  held_.clear();
  buf.append(text);
  if (const size_t close = buf.find(kClose); close != std::string::npos) {
    std::string_view before = std::string_view(buf).substr(0, close);
    while (!before.empty() && before.back() == '\n') before.remove_suffix(1);
    add_reasoning(before, out);
    in_reasoning_ = false;
    add_content(std::string_view(buf).substr(close + kClose.size()), out);
    return out;
  }
  // Hold back a possible start of "</think>" and the newlines before it.
  size_t keep = buf.size() - partial_close(buf);
  while (keep > 0 && buf[keep - 1] == '\n') --keep;
  add_reasoning(std::string_view(buf).substr(0, keep), out);
  held_ = buf.substr(keep);
  return out;
}

ReasoningSplitter::Pieces ReasoningSplitter::finish() {
  Pieces out;
  if (in_reasoning_) {
    std::string_view rest = held_;
    while (!rest.empty() && rest.back() == '\n') rest.remove_suffix(1);
    add_reasoning(rest, out);
    held_.clear();
  }
  return out;
}

ReasoningSplitter::Pieces split_reasoning(std::string_view answer) {
  ReasoningSplitter s;
  ReasoningSplitter::Pieces all = s.push(answer);
  ReasoningSplitter::Pieces rest = s.finish();
  all.reasoning += rest.reasoning;
  all.content += rest.content;
  return all;
}

}  // namespace qvl
