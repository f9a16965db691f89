#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <sstream>
#include <unordered_map>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/json_scan.h"
#include "tokenizer/packed_strings.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "util/error.h"
#include "util/json_reader.h"

namespace qvl {

using json = nlohmann::json;

struct Tokenizer::Impl {
  std::string source;
  ByteLevel byte_level;
  std::optional<BpeModel> bpe;
  std::optional<PreTokenizer> pre;
  bool nfc = false;
  std::deque<AddedToken> added;  // stable addresses: the matchers point into it
  AddedTokenMatcher raw_matcher, normalized_matcher;
  std::vector<uint8_t> known, special;  // by id
  // While loading (released once packed):
  std::vector<std::string> bytes_of;               // by id: the bytes a token decodes to
  std::unordered_map<std::string, int32_t> id_of;  // vocabulary string or added content
  // After loading:
  PackedStrings token_bytes;  // bytes_of
  PackedIndex token_ids;      // id_of

  // Tokens of words already encoded, shared by all calls and threads. Bounded:
  // once full it keeps what it has (as the `tokenizers` BPE cache does).
  static constexpr size_t kCacheWords = 1 << 16;
  static constexpr size_t kCacheWordBytes = 256;
  struct WordHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  mutable std::shared_mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int32_t>, WordHash, std::equal_to<>> cache;

  // The model's vocabulary and merges, read by JsonScanner (not as a DOM).
  struct ModelLists {
    std::vector<std::pair<std::string, int64_t>> vocab;
    std::vector<std::pair<std::string, std::string>> merges;
    bool has_vocab = false, has_merges = false;
  };
  void load(const json& j, const ModelLists& lists);
  void load_model(const json& model, const ModelLists& lists);
  void load_normalizer(const json& n);
  void load_pre_tokenizer(const json& p);
  void load_added(const json& list, size_t model_size);
  void set_token(int32_t id, const std::string& text);

  struct Work;  // scratch of one encode() call
  void encode_segment(std::string_view raw, Work& w, std::vector<int32_t>& out) const;
  void encode_words(std::string_view text, Work& w, std::vector<int32_t>& out) const;
};

struct Tokenizer::Impl::Work {
  SplitWorkspace split;
  std::vector<size_t> ends;
  BpeModel::Scratch bpe;
  std::vector<int32_t> word_ids;
  // Words missing from the shared cache, inserted under one lock at the end.
  std::vector<std::pair<std::string_view, std::vector<int32_t>>> new_words;
  std::deque<std::string> texts;  // normalized copies that new_words may view
};

namespace {

const json& field(const json& j, const char* name, const std::string& where) {
  auto it = j.find(name);
  if (it == j.end()) fail(where, ": missing field \"", name, "\"");
  return *it;
}

bool flag(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::string type_of(const json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) return "";
  return j["type"].get<std::string>();
}

}  // namespace

void Tokenizer::Impl::set_token(int32_t id, const std::string& text) {
  if (id < 0 || id > 16'000'000) fail(source, ": token id ", id, " for \"", text, "\" is out of range");
  if (static_cast<size_t>(id) >= bytes_of.size()) {
    bytes_of.resize(id + 1);
    known.resize(id + 1, 0);
    special.resize(id + 1, 0);
  }
  // The ByteLevel decoder maps a token's characters back to bytes, or keeps
  // the token's own UTF-8 when a character is not one of the 256.
  if (!byte_level.to_bytes(text, bytes_of[id])) bytes_of[id] = text;
  known[id] = 1;
}

void Tokenizer::Impl::load_model(const json& model, const ModelLists& lists) {
  const std::string where = source + ": model";
  if (!model.is_object()) fail(where, " is not an object");
  if (std::string t = type_of(model); !t.empty() && t != "BPE") fail(where, ".type is \"", t, "\"; qvl implements BPE only");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(k);
    if (it != model.end() && it->is_string() && !it->get<std::string>().empty())
      fail(where, ".", k, " is not supported (must be empty)");
  }
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null() && it->get<double>() != 0.0)
    fail(where, ".dropout is not supported (encoding would be random)");
  if (flag(model, "byte_fallback")) fail(where, ".byte_fallback is not supported with byte-level BPE");
  if (flag(model, "ignore_merges")) fail(where, ".ignore_merges is not supported");

  if (!lists.has_vocab) fail(where, ": missing field \"vocab\"");
  if (!lists.has_merges) fail(where, ": missing field \"merges\"");
  std::unordered_map<std::string, int32_t> ids;
  ids.reserve(lists.vocab.size() + 64);
  for (const auto& [token, id] : lists.vocab) {
    if (id < 0 || id > 16'000'000) fail(where, ".vocab[\"", token, "\"] = ", id, " is out of range");
    ids.emplace(token, static_cast<int32_t>(id));
    set_token(static_cast<int32_t>(id), token);
  }

  std::array<int32_t, 256> byte_ids;
  for (int b = 0; b < 256; ++b) {
    auto it = ids.find(byte_level.to_token(std::string(1, static_cast<char>(b))));
    byte_ids[b] = it == ids.end() ? -1 : it->second;
  }
  bpe.emplace(byte_ids);

  uint32_t rank = 0;
  std::string ab;
  for (const auto& [a, b] : lists.merges) {
    ab.assign(a).append(b);
    auto ia = ids.find(a), ib = ids.find(b), iab = ids.find(ab);
    if (ia == ids.end() || ib == ids.end() || iab == ids.end())
      fail(where, ".merges[", rank, "] (\"", a, "\", \"", b, "\"): ",
           ia == ids.end() ? a : ib == ids.end() ? b : a + b, " is not in the vocabulary");
    bpe->add_merge(ia->second, ib->second, iab->second, rank);
    ++rank;
  }
  id_of = std::move(ids);
}

void Tokenizer::Impl::load_normalizer(const json& n) {
  if (n.is_null()) return;
  std::string t = type_of(n);
  if (t == "NFC") {
    nfc = true;
    return;
  }
  if (t == "Sequence") {
    const std::string where = source + ": normalizer";  // a named string: no temporary beside field's reference
    for (const json& s : field(n, "normalizers", where)) load_normalizer(s);
    return;
  }
  fail(source, ": normalizer \"", t, "\" is not supported (qvl implements NFC)");
}

void Tokenizer::Impl::load_pre_tokenizer(const json& p) {
  const std::string where = source + ": pre_tokenizer";
  std::string t = type_of(p);
  if (t == "Sequence") {
    for (const json& s : field(p, "pretokenizers", where)) load_pre_tokenizer(s);
    return;
  }
  if (t == "Split") {
    const json& pattern = field(p, "pattern", where);
    if (!pattern.is_object() || !pattern.contains("Regex") || !pattern["Regex"].is_string())
      fail(where, ": Split pattern is not a regex");
    // Compared, not read with value(), which throws on a non-string behavior.
    if (const auto b = p.find("behavior"); b == p.end() || *b != "Isolated" || flag(p, "invert"))
      fail(where, ": Split must have behavior \"Isolated\" and invert false");
    if (pre) fail(where, ": more than one Split");
    try {
      pre.emplace(SplitPattern::from_regex(pattern["Regex"].get<std::string>()));
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
    return;
  }
  if (t == "ByteLevel") {
    if (flag(p, "add_prefix_space") || flag(p, "use_regex"))
      fail(where, ": ByteLevel with add_prefix_space or use_regex is not supported");
    return;
  }
  fail(where, ": \"", t, "\" is not supported (qvl implements Split(Qwen2 regex) + ByteLevel)");
}

// Ids as `tokenizers` assigns them (AddedVocabulary::add_tokens), not as the
// file writes them: a content already known (an earlier added token, else the
// model's vocabulary) keeps that id; a new one gets the vocabulary's size, or
// one past the largest added id once that is beyond the vocabulary. For files
// `tokenizers` wrote itself the two agree.
void Tokenizer::Impl::load_added(const json& list, size_t model_size) {
  if (list.is_null()) return;
  if (!list.is_array()) fail(source, ": added_tokens is not an array");
  std::unordered_map<std::string, int32_t> added_ids;
  int64_t max_added = -1;
  for (size_t k = 0; k < list.size(); ++k) {
    const json& a = list[k];
    std::string where = cat(source, ": added_tokens[", k, "]");
    AddedToken tok;
    const json& content = field(a, "content", where);
    if (!content.is_string()) fail(where, ": content is not a string");
    tok.content = content.get<std::string>();
    if (tok.content.empty()) continue;  // ignored by `tokenizers` too
    if (utf8::first_invalid(tok.content) != std::string::npos) fail(where, ": content is not valid UTF-8");
    tok.single_word = flag(a, "single_word");
    tok.lstrip = flag(a, "lstrip");
    tok.rstrip = flag(a, "rstrip");
    tok.normalized = flag(a, "normalized");
    tok.special = flag(a, "special");
    if (auto it = added_ids.find(tok.content); it != added_ids.end()) {
      tok.id = it->second;
    } else if (auto v = id_of.find(tok.content); v != id_of.end()) {
      tok.id = v->second;
    } else {
      int64_t size = static_cast<int64_t>(model_size);
      tok.id = static_cast<int32_t>(max_added < 0 ? size : (max_added >= size || size == 0) ? max_added + 1 : size);
    }
    added_ids[tok.content] = tok.id;
    max_added = std::max<int64_t>(max_added, tok.id);
    set_token(tok.id, tok.content);
    if (tok.special) special[tok.id] = 1;
    id_of[tok.content] = tok.id;
    added.push_back(std::move(tok));
    const AddedToken* t = &added.back();
    if (t->normalized)
      normalized_matcher.add(t, nfc ? unicode::nfc(t->content) : t->content);
    else
      raw_matcher.add(t, t->content);
  }
}

void Tokenizer::Impl::load(const json& j, const ModelLists& lists) {
  if (!j.is_object()) fail(source, ": not a JSON object");
  load_normalizer(j.value("normalizer", json()));
  load_pre_tokenizer(field(j, "pre_tokenizer", source));
  if (!pre) fail(source, ": pre_tokenizer has no Split with the Qwen2 regex");
  if (std::string d = type_of(j.value("decoder", json())); !d.empty() && d != "ByteLevel")
    fail(source, ": decoder \"", d, "\" is not supported (qvl implements ByteLevel)");
  load_model(field(j, "model", source), lists);
  load_added(j.value("added_tokens", json()), id_of.size());
  token_bytes.assign(bytes_of);
  token_ids.assign(id_of);
  std::vector<std::string>().swap(bytes_of);
  std::unordered_map<std::string, int32_t>().swap(id_of);
}

// Text outside added tokens: normalize, then look for the added tokens that
// match normalized text, then split into words.
void Tokenizer::Impl::encode_segment(std::string_view raw, Work& w, std::vector<int32_t>& out) const {
  std::string_view text = raw;
  if (nfc) {
    std::string n = unicode::nfc(raw);
    if (n != raw) text = w.texts.emplace_back(std::move(n));
  }
  if (normalized_matcher.empty()) return encode_words(text, w, out);
  std::vector<AddedTokenMatcher::Span> spans;
  normalized_matcher.split(text, spans);
  for (const auto& s : spans) {
    if (s.id >= 0)
      out.push_back(s.id);
    else
      encode_words(text.substr(s.begin, s.end - s.begin), w, out);
  }
}

void Tokenizer::Impl::encode_words(std::string_view text, Work& w, std::vector<int32_t>& out) const {
  w.ends.clear();
  pre->split(text, w.split, w.ends);
  std::shared_lock lock(cache_mutex);
  size_t begin = 0;
  for (size_t end : w.ends) {
    std::string_view word = text.substr(begin, end - begin);
    begin = end;
    if (word.size() == 1) {
      bpe->encode_word(word, w.bpe, out);
      continue;
    }
    if (auto it = cache.find(word); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      continue;
    }
    w.word_ids.clear();
    bpe->encode_word(word, w.bpe, w.word_ids);
    out.insert(out.end(), w.word_ids.begin(), w.word_ids.end());
    // Long words are rare and would make the cache large; like `tokenizers`,
    // cache only short ones.
    if (word.size() <= kCacheWordBytes && cache.size() + w.new_words.size() < kCacheWords)
      w.new_words.emplace_back(word, w.word_ids);
  }
  lock.unlock();
  if (w.new_words.empty()) return;
  std::unique_lock write(cache_mutex);
  for (auto& [word, ids] : w.new_words) {
    if (cache.size() >= kCacheWords) break;
    cache.try_emplace(std::string(word), std::move(ids));
  }
  w.new_words.clear();
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open tokenizer file ", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) fail("cannot read tokenizer file ", path);
  return from_json(text.str(), path);
}

namespace {

void read_vocab(JsonScanner& in, std::vector<std::pair<std::string, int64_t>>& vocab) {
  std::string key;
  for (bool first = true; in.next_key(key, first); first = false) vocab.emplace_back(key, in.read_int());
}

// Merges as ["a", "b"] pairs or, in older files, "a b" strings (exactly one
// space: byte-level tokens never contain one).
void read_merges(JsonScanner& in, std::vector<std::pair<std::string, std::string>>& merges, const std::string& where) {
  std::string a, b;
  for (bool first = true; in.next_element(first); first = false) {
    if (in.peek_is('[')) {
      in.expect('[');
      in.read_string(a);
      in.expect(',');
      in.read_string(b);
      if (!in.consume(']')) fail(where, ".merges[", merges.size(), "] is not a pair [\"a\", \"b\"]");
    } else if (in.peek_is('"')) {
      in.read_string(a);
      size_t sp = a.find(' ');
      if (sp == std::string::npos || a.find(' ', sp + 1) != std::string::npos)
        fail(where, ".merges[", merges.size(), "] = \"", a, "\" is not two tokens separated by one space");
      b = a.substr(sp + 1);
      a.resize(sp);
    } else {
      fail(where, ".merges[", merges.size(), "] is neither [\"a\", \"b\"] nor \"a b\"");
    }
    merges.emplace_back(a, b);
  }
}

// One linear pass (util/json_reader.h); a syntax error or a number outside
// a double names the file and the byte in it.
json parse_small(std::string_view text, const std::string& source, size_t offset) {
  JsonReadLimits limits;
  limits.max_depth = 512;
  json out;
  JsonReadError e;
  if (read_json(text, limits, out, e)) return out;
  if (e.kind == JsonReadError::Kind::syntax) fail(source, ": invalid JSON at byte ", offset + e.byte, ": ", e.detail);
  e.byte += offset;
  fail(source, ": ", e.describe());
}

}  // namespace

Tokenizer Tokenizer::from_json(const std::string& json_text, const std::string& source) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  // The top level and the model's small fields become a DOM; the vocabulary
  // and merges are read straight into lists.
  json top = json::object(), model = json::object();
  Impl::ModelLists lists;
  JsonScanner in(json_text, source);
  std::string key, model_key;
  for (bool first = true; in.next_key(key, first); first = false) {
    if (key != "model") {
      size_t at = in.pos();
      top[key] = parse_small(in.raw_value(), source, at);
      continue;
    }
    if (!in.peek_is('{')) fail(source, ": model is not an object");
    for (bool f = true; in.next_key(model_key, f); f = false) {
      if (model_key == "vocab") {
        if (!in.peek_is('{')) fail(source, ": model.vocab is not an object");
        lists.has_vocab = true;
        read_vocab(in, lists.vocab);
      } else if (model_key == "merges") {
        if (!in.peek_is('[')) fail(source, ": model.merges is not an array");
        lists.has_merges = true;
        read_merges(in, lists.merges, source + ": model");
      } else {
        size_t at = in.pos();
        model[model_key] = parse_small(in.raw_value(), source, at);
      }
    }
    top["model"] = std::move(model);
  }
  in.at_end();
  try {
    impl->load(top, lists);
  } catch (const json::exception& e) {
    fail(source, ": unexpected JSON structure: ", e.what());
  }
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  if (size_t bad = utf8::first_invalid(text); bad != std::string_view::npos)
    fail("text to tokenize is not valid UTF-8 at byte ", bad);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  Impl::Work w;
  if (impl_->raw_matcher.empty()) {
    impl_->encode_segment(text, w, out);
    return out;
  }
  std::vector<AddedTokenMatcher::Span> spans;
  impl_->raw_matcher.split(text, spans);
  for (const auto& s : spans) {
    if (s.id >= 0)
      out.push_back(s.id);
    else
      impl_->encode_segment(text.substr(s.begin, s.end - s.begin), w, out);
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (int32_t id : ids) {
    // Unknown ids decode to nothing, as in `tokenizers` (id_to_token is None).
    if (id < 0 || static_cast<size_t>(id) >= impl_->known.size() || !impl_->known[id]) continue;
    if (skip_special && impl_->special[id]) continue;
    bytes += impl_->token_bytes[id];
  }
  return utf8::lossy(bytes);
}

std::string Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->known.size() || !impl_->known[id]) return {};
  return std::string(impl_->token_bytes[id]);
}

int32_t Tokenizer::token_id(std::string_view token) const {
  return impl_->token_ids.find(token);
}

bool Tokenizer::is_special(int32_t id) const {
  return id >= 0 && static_cast<size_t>(id) < impl_->special.size() && impl_->special[id];
}

size_t Tokenizer::vocab_size() const { return impl_->known.size(); }

}  // namespace qvl
