// A Thinking model's answer is its reasoning, "</think>", then its reply (the
// prompt already opened the think block). ReasoningSplitter splits the
// answer's text into the two as it streams, the way the Thinking chat
// template reads them back from a history message: the reasoning without its
// surrounding newlines (`reasoning_content.strip('\n')`), the reply without
// its leading ones (`content.lstrip('\n')`). An answer that never closes the
// block is all reasoning. The pieces pushed so far, split and concatenated,
// equal the split of their concatenation (split_reasoning), whatever the cuts.
#pragma once

#include <string>
#include <string_view>

namespace qvl {

class ReasoningSplitter {
 public:
  struct Pieces {
    std::string reasoning;
    std::string content;
  };
  Pieces push(std::string_view text);
  Pieces finish();  // the end of the answer: what was held back

 private:
  void add_reasoning(std::string_view text, Pieces& out);
  void add_content(std::string_view text, Pieces& out);

  bool in_reasoning_ = true;
  bool reasoning_started_ = false;  // leading newlines are dropped until then
  bool content_started_ = false;
  // Reasoning not shown yet: trailing newlines (dropped if "</think>" or the
  // end follows) and a tail that may be the start of "</think>".
  std::string held_;
};

// The whole answer at once: {reasoning, content}.
ReasoningSplitter::Pieces split_reasoning(std::string_view answer);

}  // namespace qvl
