// libFuzzer target: an image_url as a client sends it, read by
// fetch_media_bytes with the default media options (data: URIs decoded by
// the strict base64 decoder; http(s) and file URLs refused without a fetch),
// and the same bytes given to base64_decode directly. Only success or an
// ApiError / qvl::Error is allowed; a decode must agree with base64_decoded_size.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/requests/api_error.h"
#include "server/media/base64.h"
#include "server/media/media.h"
#include "server_limits.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t bad = 0;
  if (const auto decoded = qvl::base64_decode(text, &bad)) {
    if (decoded->size() > qvl::base64_decoded_size(text)) __builtin_trap();
  } else if (bad > text.size()) {
    __builtin_trap();
  }
  static const qvl::MediaOptions media = qvl::fuzz::server_chat_limits().media;
  try {
    qvl::fetch_media_bytes(text, media, "messages[0].content[0].image_url.url");
    qvl::fetch_media_bytes("data:image/png;base64," + text, media, "messages[0].content[0].image_url.url");
  } catch (const qvl::ApiError& e) {
    qvl::fuzz::check_reply(e);
  } catch (const qvl::Error&) {
  }
  return 0;
}
