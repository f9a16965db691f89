// libFuzzer target: the tokenizer of the tiny fixture model (Qwen's real
// tokenizer.json) on arbitrary input. The first byte picks what the rest is:
//   0  text to encode (any bytes: invalid UTF-8 must be refused with qvl::Error)
//   1  token ids to decode, 4 bytes each (in range, out of range and negative)
//   2  token ids to decode, then the decoded text encoded again
// Only invalid UTF-8 may throw (qvl::Error); besides that, it checks what must hold:
//   - encode gives known ids, and decode(encode(t)) == t when t is valid
//     UTF-8 already in NFC (the normalizer is NFC; byte-level BPE loses nothing);
//   - decode always gives valid UTF-8, so it can always be encoded again;
//   - StreamDecoder's pieces concatenate to decode() of the same ids, with and
//     without skipping special tokens.
// A property that fails calls __builtin_trap(), which libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace {

// Loaded once per process: 11 MB of JSON, far slower than one fuzz input.
const qvl::Tokenizer& fixture_tokenizer() {
  static const qvl::Tokenizer tokenizer =
      qvl::Tokenizer::load(QVL_SOURCE_DIR "/tests/fixtures/tiny-qwen3vl/tokenizer.json");
  return tokenizer;
}

void require(bool property) {
  if (!property) __builtin_trap();
}

// Four bytes per id. A non-negative value is folded into the vocabulary plus
// a few ids past its end, so most ids are real tokens; a negative one is kept.
std::vector<int32_t> ids_from_bytes(std::span<const uint8_t> bytes, size_t vocab_size) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    int32_t v;
    std::memcpy(&v, bytes.data() + i, 4);
    ids.push_back(v >= 0 ? static_cast<int32_t>(static_cast<size_t>(v) % (vocab_size + 16)) : v);
  }
  return ids;
}

std::string stream_decode(const qvl::Tokenizer& tok, std::span<const int32_t> ids, bool skip_special) {
  qvl::StreamDecoder stream(tok, skip_special);
  std::string text;
  for (int32_t id : ids) {
    std::string piece = stream.push(id);
    require(qvl::utf8::first_invalid(piece) == std::string_view::npos);
    text += piece;
  }
  text += stream.finish();
  return text;
}

void check_decode(const qvl::Tokenizer& tok, std::span<const int32_t> ids) {
  for (bool skip_special : {false, true}) {
    const std::string text = tok.decode(ids, skip_special);
    require(qvl::utf8::first_invalid(text) == std::string_view::npos);
    require(stream_decode(tok, ids, skip_special) == text);
  }
}

void check_encode(const qvl::Tokenizer& tok, std::string_view text) {
  if (qvl::utf8::first_invalid(text) != std::string_view::npos) {
    try {
      tok.encode(text);
    } catch (const qvl::Error&) {
      return;
    }
    __builtin_trap();  // invalid UTF-8 was accepted
  }
  const std::vector<int32_t> ids = tok.encode(text);
  for (int32_t id : ids) require(id >= 0 && static_cast<size_t>(id) < tok.vocab_size() && !tok.token_bytes(id).empty());
  if (qvl::unicode::nfc(text) == text) require(tok.decode(ids) == text);
  check_decode(tok, ids);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const qvl::Tokenizer& tok = fixture_tokenizer();
  const std::span<const uint8_t> payload(data + 1, size - 1);
  // No catch-all: only invalid UTF-8 may throw (check_encode expects it); any
  // other exception escapes and libFuzzer reports it.
  switch (data[0] % 3) {
    case 0:
      check_encode(tok, std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()));
      break;
    case 1:
      check_decode(tok, ids_from_bytes(payload, tok.vocab_size()));
      break;
    case 2: {
      const std::vector<int32_t> ids = ids_from_bytes(payload, tok.vocab_size());
      check_decode(tok, ids);
      check_encode(tok, tok.decode(ids));
      break;
    }
  }
  return 0;
}
