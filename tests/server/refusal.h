// The server's default request limits, and the ApiError a chat body is
// refused with, for tests of parsing without a running server.
#pragma once

#include <functional>
#include <string>

#include "server/requests/api_error.h"
#include "server/media/chat_media.h"
#include "server/requests/chat_request.h"
#include "server/requests/json_limits.h"
#include "server/server_options.h"

namespace qvl::test {

inline JsonLimits server_limits() {
  const ServerOptions o;
  return request_json_limits(o.json_max_depth, o.media.max_image_bytes);
}

// The error `f` throws; status 0 if none.
inline ApiError refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "");
}

inline ApiError chat_refusal(const std::string& body) {
  // What the route does: the parse, then the media step.
  return refusal([&] {
    ChatRequest r = parse_chat_request(parse_json_body(body, server_limits()), ChatLimits{});
    take_chat_media(r, ChatLimits{}, nullptr);
  });
}

}  // namespace qvl::test
