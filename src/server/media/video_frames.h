// POST /v1/qvl/videos/frames: which frames of a clip the model will see, at
// what time, and what the clip costs, before a client asks about it (the page
// shows this as a strip of thumbnails whose times the answer can point at).
//
// The body is a video part without its "type" (docs/api.md "Videos"): "video"
// (a URL under the media rules, or a list of frame URLs with "sample_fps"),
// the sampling keys fps, min_frames, max_frames, min_pixels, max_pixels and
// total_pixels, plus "thumbnail_size". It is parsed by parse_video_part and
// decoded by decode_videos, the chat route's own code, so the frames,
// timestamps and refusals are the ones a chat request with the same part
// gets; the token count is the engine's (the caller's VideoTokenCounter).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "server/requests/chat_request.h"
#include "server/media/video_input.h"

namespace qvl {

class MemoryAdmission;

// A thumbnail's longest side, px. Small: a minute at 2 fps is 120 of them
// (about 3 KB each at 160 px), and the strip shows them at 96 px.
inline constexpr int kMinVideoThumbnailSize = 32, kMaxVideoThumbnailSize = 512, kDefaultVideoThumbnailSize = 160;

struct VideoFramesRequest {
  PendingVideo video;  // param "video": decode refusals name the body's video
  int thumbnail_size = kDefaultVideoThumbnailSize;
};

// Every field checked, 400 naming it (the sampling keys as in a chat part);
// any other field 400 unsupported_parameter.
VideoFramesRequest parse_video_frames_request(const nlohmann::ordered_json& body);

// The video tokens of a decoded clip in a chat request (throws ApiError when
// the engine's processor refuses it).
using VideoTokenCounter = std::function<int64_t(const std::shared_ptr<const Video>& video)>;

// {"object": "qvl.video", "width", "height", "fps", "total_frames",
//  "duration", "container", "codec", "video_tokens", "thumbnail_size",
//  "frames": [{"index", "time", "group", "thumbnail"?}],
//  "groups": [{"time", "text", "frames": [k, ...]}]}: each sampled frame (its
// index in the clip, its time index / fps, its temporal group), each group
// as the prompt introduces it (the mean time of its two frames, and the
// "<t seconds>" text). Refusals as a chat request's video, naming "video":
// 400 invalid_video, 413 / 429 from the image admission. Thumbnails stop
// (the rest come without one, "thumbnails_stopped" says why) once the image
// time limit is spent.
nlohmann::json video_frames_json(const VideoFramesRequest& request, const ChatLimits& limits, MemoryAdmission* admission,
                                 const VideoTokenCounter& tokens);

}  // namespace qvl
