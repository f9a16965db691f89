// libFuzzer target: a POST /v1/responses body as the route reads it:
// parse_json_body (server limits), parse_responses_request against an empty
// store with the server's default limits (no I/O), then take_chat_media as
// the route runs it (data: media are decoded; remote and file URLs are
// refused by default), its refusal renamed to the Responses fields.
// Only success or an ApiError / qvl::Error is allowed, and a refusal must serialise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/requests/api_error.h"
#include "server/media/chat_media.h"
#include "server/requests/responses_request.h"
#include "server_limits.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const qvl::JsonLimits json_limits = qvl::fuzz::server_json_limits();
  static const qvl::ChatLimits chat_limits = qvl::fuzz::server_chat_limits();
  static const qvl::MemoryResponseStore store;
  try {
    const nlohmann::ordered_json body =
        qvl::parse_json_body(std::string_view(reinterpret_cast<const char*>(data), size), json_limits);
    qvl::ResponsesRequest rr = qvl::parse_responses_request(body, store, chat_limits);
    try {
      qvl::take_chat_media(rr.chat, chat_limits, nullptr);
    } catch (const qvl::ApiError& e) {
      qvl::fuzz::check_reply(qvl::responses_error(e));
    }
  } catch (const qvl::ApiError& e) {
    qvl::fuzz::check_reply(e);
  } catch (const qvl::Error&) {
  }
  return 0;
}
