// Qwen3-VL's tool calls in an answer's text, as its chat template teaches
// them: each call is a block
//   <tool_call>\n{"name": "NAME", "arguments": {...}}\n</tool_call>
// (blocks separated by "\n"; text may stand before the first). The parser
// reads the text as it streams and splits it into content and calls, so a
// front end can stream OpenAI's delta.tool_calls: the name once known, then
// the arguments JSON piece by piece.
//
// Lenient in what a model writes: any JSON whitespace around and inside the
// object, "name" and "arguments" in either order (arguments first: they are
// emitted once the name is known), arguments as an object (its text as
// written), as a JSON string holding the object (the decoded text, trimmed),
// as null or missing ("{}"). Other keys are skipped. The "\n" right before
// <tool_call> and the one right after </tool_call> are markup, not content.
//
// A block that goes wrong (not this shape, or unfinished at finish()):
// before its CallBegin, its text so far becomes content and reading resumes
// as text at the character that broke it; after its CallBegin (the client
// has seen the call), the call is kept in calls() with the arguments text
// streamed so far (possibly cut short, or "") and the text from the
// character that broke it is read as text again.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace qvl {

class ToolCallParser {
 public:
  struct Event {
    enum class Kind { Content, CallBegin, CallArguments };
    Kind kind = Kind::Content;
    int index = 0;     // the call's index (CallBegin, CallArguments)
    std::string text;  // Content: text; CallBegin: the function name; CallArguments: a piece of the arguments JSON
    std::string id;    // CallBegin: the call's id ("call_…")
  };
  // Text that may be the start of a block is held back until it is known not to be.
  std::vector<Event> push(std::string_view text);
  // End of the answer: what was held back is released (an unfinished or
  // malformed block becomes content).
  std::vector<Event> finish();
  const std::vector<ToolCall>& calls() const { return calls_; }  // complete calls so far
  const std::string& content() const { return content_; }        // text outside the blocks so far

 private:
  enum class State { Text, Open, Key, KeyString, Colon, Value, InValue, AfterValue, AfterObject, Close };
  enum class Target { Name, Arguments, Other };           // what the value being read is
  enum class ValueKind { Container, String, Scalar };

  void step(char c, std::vector<Event>& out);
  bool block_step(char c, std::vector<Event>& out);  // false: c breaks the block
  bool end_value(std::vector<Event>& out);
  bool end_object(std::vector<Event>& out);  // false: no name
  void end_block(std::vector<Event>& out);   // </tool_call> read
  void break_block(std::vector<Event>& out);  // malformed or unfinished
  void release_text(std::vector<Event>& out, bool all);
  void emit_content(std::vector<Event>& out, std::string_view text);
  void flush_arguments(std::vector<Event>& out);
  int decode(char c, std::string* sink);  // one char of a JSON string: 0 more, 1 closed, -1 malformed
  void reset_block();

  std::vector<ToolCall> calls_;
  std::string content_;
  std::string pending_;  // Text: not yet released (a suffix that may begin "\n<tool_call>")
  State state_ = State::Text;
  bool eat_newline_ = false;  // just after </tool_call>
  std::string raw_;           // the block's text so far, markup included
  // The object being read.
  bool first_key_ = true;
  std::string key_;
  Target target_ = Target::Other;
  ValueKind kind_ = ValueKind::Scalar;
  std::string brackets_;  // Container: open brackets
  bool in_string_ = false, escaped_ = false;  // Container: inside a string
  std::string escape_;    // String: an escape sequence being read
  std::string scalar_;    // Scalar: its text
  std::string ws_;        // arguments as a string: whitespace held back (trailing whitespace is trimmed)
  size_t close_ = 0;      // Close: chars of "</tool_call>" matched
  bool have_name_ = false, have_arguments_ = false, begun_ = false;
  std::string name_, id_;
  std::string arguments_;     // the call's arguments text so far
  size_t arguments_sent_ = 0;  // of which emitted as CallArguments
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace qvl
