// The limits the server applies to a request, from ServerOptions' defaults,
// as ServerCore's constructor (src/server/server.cpp) sets them: the fuzz
// targets parse bodies exactly as the routes do.
#pragma once

#include "server/requests/chat_request.h"
#include "server/requests/json_limits.h"
#include "server/server_options.h"

namespace qvl::fuzz {

inline JsonLimits server_json_limits() {
  const ServerOptions o;
  return request_json_limits(o.json_max_depth, o.media.max_image_bytes);
}

inline ChatLimits server_chat_limits() {
  const ServerOptions o;  // no remote fetches, no local files
  return request_chat_limits(o.media, o.repetition_guard);
}

// A refusal must serialise as the server sends it.
inline void check_reply(const ApiError& e) {
  const std::string body = e.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (e.status() < 400 || e.status() > 599 || body.empty()) __builtin_trap();
}

}  // namespace qvl::fuzz
