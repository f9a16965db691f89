// Constrained decoding: a byte-level context-free grammar (built by hand or
// expanded from a JSON Schema), bound to a tokenizer's vocabulary, and a
// matcher that says at every step which tokens may come next.
//
// The grammar works on UTF-8 *bytes*, so a token that ends inside a
// multi-byte character (Qwen's byte-level BPE has many) leaves the matcher
// inside that character's byte sequence, and a character class such as "any
// JSON string character" is spelled as the UTF-8 byte sequences it allows.
//
// This layer knows nothing of models or HTTP: token ids come with the bytes
// they stand for (TokenVocab), and masks are bitsets over those ids.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

class Grammar;  // immutable once built; shared between threads

// Builds a grammar from nodes. Node handles are valid for this builder only.
class GrammarBuilder {
 public:
  using Node = int32_t;
  GrammarBuilder();
  ~GrammarBuilder();
  GrammarBuilder(GrammarBuilder&&) noexcept;

  Node literal(std::string_view bytes);                 // exactly these bytes ("" matches nothing... the empty string)
  Node sequence(std::vector<Node> items);               // each in turn
  Node choice(std::vector<Node> alternatives);          // any one of them
  // item repeated min..max times (max -1: unbounded), `separator` (if >= 0)
  // between consecutive items.
  Node repeat(Node item, int min, int max, Node separator = -1);
  Node json_value();   // any JSON value (RFC 8259), no whitespace around it
  Node json_object();  // any JSON object
  // A JSON value valid against `schema` (draft 2020-12 subset, see
  // json_schema.cpp). Refuses what it cannot enforce with FieldError naming
  // `field` + the keyword's path (e.g. "response_format.json_schema.schema.properties.a.pattern").
  Node json_schema(const nlohmann::ordered_json& schema, const std::string& field);

  // One byte in any of these inclusive ranges, e.g. {{'0', '9'}, {'a', 'f'}}.
  Node bytes_in(std::vector<std::pair<uint8_t, uint8_t>> ranges);
  // Recursion: a placeholder usable in other nodes at once, given its body
  // later with define() (exactly once, before build()).
  Node forward();
  void define(Node forward, Node body);

  // Throws qvl::Error if the grammar matches nothing or is left-recursive
  // (a rule reaching itself before any byte is read).
  std::shared_ptr<const Grammar> build(Node root);  // the builder is spent afterwards

  struct Impl;  // grammar_builder.h; used by the JSON and JSON Schema expanders
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// The vocabulary as the grammar sees it: token id -> the bytes it stands for.
// A token with no bytes (special tokens) never matches a grammar. Built once
// per tokenizer and shared by every constraint.
class TokenVocab {
 public:
  explicit TokenVocab(std::vector<std::string> token_bytes);  // [vocab]
  ~TokenVocab();
  size_t size() const;
  const std::string& bytes(int32_t id) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// A set of token ids: bit i of words[i / 64] for token i.
struct TokenMask {
  std::vector<uint64_t> words;
  bool test(int32_t id) const { return (words[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
  size_t count() const;
  bool any() const;
  // The one token the set holds; -1 when it holds none or several (a
  // constrained step with one continuation: jump-forward's forced token).
  int32_t only() const;
  void intersect(const TokenMask& other);  // this &= other (same vocabulary)
};

// A grammar bound to a vocabulary: the automaton's states (discovered as
// matchers reach them) and each state's token mask, computed once and cached,
// shared by every matcher of this grammar. Thread-safe.
class TokenGrammar {
 public:
  // Bounds on the shared tables. Past max_states (recursion makes the state
  // space unbounded) every table is rebuilt from the live matchers' states;
  // past max_mask_bytes the cached masks are dropped. Either only costs time.
  struct Limits {
    size_t max_states = size_t{1} << 16;          // x (1 KiB row + configuration)
    size_t max_mask_bytes = size_t{256} << 20;    // ~13k masks of a 152k vocabulary
  };
  static std::shared_ptr<TokenGrammar> create(std::shared_ptr<const Grammar> grammar,
                                              std::shared_ptr<const TokenVocab> vocab);
  static std::shared_ptr<TokenGrammar> create(std::shared_ptr<const Grammar> grammar,
                                              std::shared_ptr<const TokenVocab> vocab, Limits limits);
  ~TokenGrammar();
  struct Impl;
  Impl& impl() { return *impl_; }
  size_t cached_masks() const;  // for tests and benchmarks

  struct Stats {
    size_t states = 0;             // interned configurations now
    size_t masks = 0;              // cached masks now
    size_t mask_bytes = 0;         // their bytes now
    size_t peak_mask_bytes = 0;    // the most they ever held
    size_t masks_computed = 0;     // cache misses since creation
    size_t resets = 0;             // times the state tables were rebuilt
  };
  Stats stats() const;

 private:
  explicit TokenGrammar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where one generation is in its grammar.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<TokenGrammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;
  // A copy is at the same point and then goes its own way (look-ahead,
  // trying a token without committing to it).
  GrammarMatcher(const GrammarMatcher&);
  GrammarMatcher& operator=(const GrammarMatcher&);

  // The tokens whose bytes can come next (the answer so far plus the token
  // is still a prefix of some sentence of the grammar). EOS is not in it: the
  // caller adds it when complete().
  const TokenMask& allowed();
  bool accept(int32_t token);            // false, state unchanged, if the token is not allowed
  bool accept_bytes(std::string_view b); // the same for raw bytes
  bool complete() const;      // what was accepted is a whole sentence: the answer may end here
  bool can_continue() const;  // some byte may still follow

 private:
  std::shared_ptr<TokenGrammar> grammar_;
  uint32_t state_ = 0;  // an interned configuration; rewritten (under the grammar's lock) when its tables are rebuilt
  std::shared_ptr<const TokenMask> mask_;  // what allowed() returned last: kept alive if the cache drops it
};

}  // namespace qvl
