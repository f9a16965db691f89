// libFuzzer target: a POST /v1/responses body as the route reads it:
// parse_json_body (server limits), then parse_responses_request against an
// empty store with the server's default limits (data: images are decoded;
// remote and file URLs are refused by default). Only success or an ApiError /
// qvl::Error is allowed, and a refusal must serialise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/api_error.h"
#include "server/responses_request.h"
#include "server_limits.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const qvl::JsonLimits json_limits = qvl::fuzz::server_json_limits();
  static const qvl::ChatLimits chat_limits = qvl::fuzz::server_chat_limits();
  static const qvl::MemoryResponseStore store;
  try {
    const nlohmann::ordered_json body =
        qvl::parse_json_body(std::string_view(reinterpret_cast<const char*>(data), size), json_limits);
    qvl::parse_responses_request(body, store, chat_limits);
  } catch (const qvl::ApiError& e) {
    qvl::fuzz::check_reply(e);
  } catch (const qvl::Error&) {
  }
  return 0;
}
