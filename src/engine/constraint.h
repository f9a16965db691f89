// What a request's response_format and tools compile to: the grammars that
// constrain its answer, built once per distinct request shape and cached
// (ConstraintCache), bound to the model's vocabulary so every state's token
// mask is computed once and shared by later requests.
//
//   response_format json_object / json_schema  -> the whole answer is that value
//   tool_choice required / a named function    -> the whole answer is tool-call blocks
//   tool_choice auto                           -> free text; a <tool_call> block, once
//                                                 the model opens one, is a valid call
//   tool_choice none                           -> no block may open
// The block format is Qwen3-VL's, exactly as its chat template renders a call:
//   <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>   ("\n" between blocks)
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "engine/engine.h"
#include "grammar/grammar.h"

namespace qvl {

struct Constraint {
  std::shared_ptr<TokenGrammar> whole;  // the whole answer follows it; null: free text
  std::shared_ptr<TokenGrammar> block;  // tool_choice auto: a block after the model's <tool_call> token
  bool no_calls = false;                // tool_choice none: the <tool_call> token is masked out
};

class ConstraintCache {
 public:
  // `vocab`: the model's tokens as bytes (special tokens empty).
  ConstraintCache(std::shared_ptr<const TokenVocab> vocab, size_t capacity = 32);
  // The request's constraint (null when it has none), compiled on first use.
  // Throws FieldError naming the field a schema or tool cannot be enforced at.
  std::shared_ptr<const Constraint> get(const GenerateRequest& request);

 private:
  std::shared_ptr<const TokenVocab> vocab_;
  size_t capacity_;
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const Constraint>>> lru_;  // most recent first
};

}  // namespace qvl
