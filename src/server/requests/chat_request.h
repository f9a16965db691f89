// An OpenAI chat-completions body turned into a GenerateRequest: every field
// type-checked (400 naming the field), with no I/O: the media parts are left
// pending (media_source.h), and take_chat_media (chat_media.h) fetches and
// decodes them after, on the request's thread, so a bad upload is refused
// before it takes a slot and a body refused for any field costs no media
// work (the media count is checked before anything).
// Every top-level field is on an allow-list (kChatFields): honoured, or
// accepted as bookkeeping that cannot change the answer; anything else is a
// 400 naming it: nothing that changes the answer is dropped in silence.
//
// The body is an ordered_json so the tools' definitions and the response
// schema keep the client's key order (the template renders a tool as sent;
// a schema's properties are generated in its order).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "image/image.h"
#include "media/intake.h"
#include "server/media/media.h"
#include "server/requests/media_source.h"

namespace qvl {

class MemoryAdmission;

struct ChatLimits {
  MediaOptions media;
  DecodeLimits decode;           // max_encoded_bytes follows media.max_image_bytes
  RepetitionGuardOptions repetition_guard;  // server-wide; a request may change it
  int64_t max_text_bytes = 1 << 20;  // one text part
  int max_images = 32;
  int max_stop = 16;
  int max_n = 8;                 // choices per request
  int64_t vocab_size = 0;        // logit_bias ids must be below it (0: unchecked here)
  int max_logit_bias = 300;      // entries
  int max_tools = 128;
  // The engine's video-token budget (EngineInfo::video_budget): frames are
  // sampled within it; a frame list longer than it allows is refused.
  VideoTokenBudget video_budget;
};

struct ChatRequest {
  GenerateRequest generate;
  std::string model;  // as sent (echoed back)
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;  // generate.top_logprobs >= 0
  int media = 0;        // media parts: images, clips, and a PDF's pages once it is opened
  double media_ms = 0;  // fetch + decode on the request thread
  PendingMedia pending; // what take_chat_media fetches and decodes
};

// The top-level fields parse_chat_request knows (honoured or bookkeeping);
// /v1/models lists them as supported_parameters.
std::span<const std::string_view> chat_fields();

// What the server applies: its media options (the largest encoded image
// follows max_image_bytes) and its default repetition guard.
ChatLimits request_chat_limits(const MediaOptions& media, const RepetitionGuardOptions& repetition_guard);

// The decoders' caps of a request's media (media/intake.h) under `limits`.
MediaLimits media_limits(const ChatLimits& limits);

// The request's media ran past its deadline (--image-time-limit): 400
// image_time_limit naming `param`.
[[noreturn]] void refuse_time_limit(const MediaTimeLimit& e, const std::string& param);

// A file over its kind's cap (media/intake.h): 413 image_too_large naming
// `param` and the flag that sets the cap.
[[noreturn]] void refuse_too_large(const MediaTooLarge& e, const std::string& param);

// The body read and checked, its media pending: no I/O, nothing decoded.
ChatRequest parse_chat_request(const nlohmann::ordered_json& body, const ChatLimits& limits);

}  // namespace qvl
