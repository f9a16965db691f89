// Video parts of a chat request: vLLM's {"type": "video_url", "video_url":
// {"url": ...}} and Qwen's {"type": "video", "video": URL | [frame URLs],
// "sample_fps": N}, with the per-request sampling and pixel keys of
// qwen-vl-utils (in the part) or vLLM's mm_processor_kwargs. URLs follow the
// image rules (media.h); a clip is decoded from memory by src/video, a frame
// list image by image, both admitted against the image memory budget.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/requests/chat_request.h"
#include "server/requests/media_source.h"
#include "server/requests/request_fields.h"
#include "media/intake.h"
#include "video/video.h"

namespace qvl {

// mm_processor_kwargs: VideoOptions' keys; any other is a 400 naming it.
VideoOptions parse_mm_processor_kwargs(const RequestField& kwargs);

// `defaults`: mm_processor_kwargs; the part's own keys win. Refusals name
// paths below the part's ("messages[0].content[1]" -> "messages[0].content[1].fps");
// bare keys for a body that is a part (POST /v1/qvl/videos/frames: "fps").
PendingVideo parse_video_part(const RequestField& part, const VideoOptions& defaults);

// Fetches each pending video and hands it to the request's media intake,
// into its message part. Throws ApiError: 400 naming the part for a video
// that cannot be used or the spent time limit, 413 / 429 from the admission.
void decode_videos(ChatRequest& out, const std::vector<PendingVideo>& pending, const ChatLimits& limits,
                   MediaIntake& intake);

}  // namespace qvl
