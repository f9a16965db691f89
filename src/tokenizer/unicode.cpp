#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qvl::unicode {

uint8_t classify(uint32_t cp) {
  if (cp < 0x80) {
    if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return kLetter;
    if (cp >= '0' && cp <= '9') return kNumber;
    if (cp == '\r' || cp == '\n') return kSpace | kLineBreak;
    if (cp == ' ' || (cp >= 9 && cp <= 13)) return kSpace;
    return 0;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return kNumber;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return kSpace;
    default:
      return cp == 0x85 ? kSpace : 0;
  }
}

bool is_space(uint32_t cp) { return (classify(cp) & kSpace) != 0; }

bool is_punctuation(uint32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

bool is_word_char(uint32_t cp) {
  if (cp == 0x200C || cp == 0x200D) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

namespace {

// True when NFC leaves cp alone whatever surrounds it: no canonical
// decomposition, combining class 0, and never the second half of a canonical
// composition. utf8proc 2.x marks composition seconds with comb_index values
// >= 0x8000 (0xFFFF meaning "none"); Hangul is composed algorithmically, so
// conjoining jamo and syllables take the slow path.
bool inert(uint32_t cp) {
  if (cp < 0x300) return true;  // below the first combining mark, all starters without canonical decompositions
  if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xAC00 && cp <= 0xD7A3)) return false;
  const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  if (p->combining_class != 0) return false;
  if (p->decomp_seqindex != UINT16_MAX && p->decomp_type == 0) return false;  // canonical decomposition
  if (p->comb_index != UINT16_MAX && p->comb_index >= 0x8000) return false;
  return true;
}

}  // namespace

std::string nfc(std::string_view text) {
  bool unchanged = true;
  for (size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8::valid_length(text, i);
    if (n == 0) fail("text is not valid UTF-8 at byte ", i);
    if (!inert(utf8::code_point(text, i, n))) {
      unchanged = false;
      break;
    }
    i += n;
  }
  if (unchanged) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                      static_cast<utf8proc_ssize_t>(text.size()), &out,
                                      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (len < 0) fail("NFC normalization failed: ", utf8proc_errmsg(len));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> hold(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
}

}  // namespace qvl::unicode
