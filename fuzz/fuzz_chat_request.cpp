// libFuzzer target: a POST /v1/chat/completions (and /v1/jobs) body as the
// routes read it: parse_json_body with the server's default limits, then
// parse_chat_request with its default limits (the pure parse, no I/O), then
// take_chat_media as the route runs it (data: media are decoded; remote and
// local ones are refused, as by default). Only success or an
// ApiError / qvl::Error is allowed, and a refusal must serialise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/requests/api_error.h"
#include "server/media/chat_media.h"
#include "server_limits.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const qvl::JsonLimits json_limits = qvl::fuzz::server_json_limits();
  static const qvl::ChatLimits chat_limits = qvl::fuzz::server_chat_limits();
  try {
    const nlohmann::ordered_json body =
        qvl::parse_json_body(std::string_view(reinterpret_cast<const char*>(data), size), json_limits);
    qvl::ChatRequest request = qvl::parse_chat_request(body, chat_limits);
    qvl::take_chat_media(request, chat_limits, nullptr);
  } catch (const qvl::ApiError& e) {
    qvl::fuzz::check_reply(e);
  } catch (const qvl::Error&) {
  }
  return 0;
}
