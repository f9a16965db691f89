#include "server/media/video_frames.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "image/encode.h"
#include "image/preprocess.h"
#include "server/requests/api_error.h"
#include "server/media/base64.h"
#include "media/intake.h"
#include "server/media/memory_admission.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Thumbnails are for eyes, not the model (as a document's, document_pages.cpp).
constexpr int kThumbnailQuality = 80;
// Qwen3-VL's temporal patch: two frames per group (video.h, temporal_group_timestamps).
constexpr int kFramesPerGroup = 2;

// A frame shrunk to `size` px on its longest side (never enlarged), as a data: URL.
std::string thumbnail(const Image& frame, int size) {
  const double scale = std::min(1.0, static_cast<double>(size) / std::max(frame.width, frame.height));
  const int w = std::max(1, static_cast<int>(std::lround(frame.width * scale)));
  const int h = std::max(1, static_cast<int>(std::lround(frame.height * scale)));
  const Image small = scale < 1.0 ? resize_bicubic(frame, w, h) : frame;
  return "data:image/jpeg;base64," + base64_encode(encode_jpeg(small, kThumbnailQuality));
}

}  // namespace

VideoFramesRequest parse_video_frames_request(const ojson& body) {
  RequestField(body).object();
  VideoFramesRequest r;
  ojson part = ojson::object();
  part["type"] = "video";
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    if (k == "thumbnail_size") {
      if (auto size = RequestField(body).integer(k, kMinVideoThumbnailSize, kMaxVideoThumbnailSize))
        r.thumbnail_size = static_cast<int>(*size);
    } else if (k == "type") {
      // Not a part: "type" would choose nothing here.
      bad_request(k, "unknown or unsupported parameter 'type' (the body is a video part without its type)",
                  "unsupported_parameter");
    } else {
      part[k] = *it;  // the video part's own keys, checked by parse_video_part
    }
  }
  r.video = parse_video_part(RequestField(part), {});
  r.video.param = "video";
  return r;
}

json video_frames_json(const VideoFramesRequest& request, const ChatLimits& limits, MemoryAdmission* admission,
                       const VideoTokenCounter& tokens) {
  // The chat route's decoding, into a one-part request; the thumbnails
  // share its deadline.
  MediaIntake intake(media_limits(limits), admission);
  const Clock::time_point deadline = intake.deadline();
  ChatRequest decoded;
  decoded.generate.messages.push_back(Message{"user", {MessagePart{}}, {}});
  decode_videos(decoded, {request.video}, limits, intake);
  const std::shared_ptr<const Video> video = decoded.generate.messages[0].parts[0].video;

  const int64_t video_tokens = tokens(video);
  const std::vector<double> group_times = temporal_group_timestamps(video->frame_indices, video->fps, kFramesPerGroup);

  json frames = json::array();
  bool thumbnails_stopped = false;
  for (size_t k = 0; k < video->frames.size(); ++k) {
    json f = {{"index", video->frame_indices[k]},
              {"time", static_cast<double>(video->frame_indices[k]) / video->fps},
              {"group", k / kFramesPerGroup}};
    if (!thumbnails_stopped && Clock::now() >= deadline) thumbnails_stopped = true;
    if (!thumbnails_stopped) f["thumbnail"] = thumbnail(video->frames[k], request.thumbnail_size);
    frames.push_back(std::move(f));
  }
  json groups = json::array();
  for (size_t g = 0; g < group_times.size(); ++g) {
    json members = json::array();
    for (size_t k = g * kFramesPerGroup; k < std::min((g + 1) * kFramesPerGroup, video->frames.size()); ++k)
      members.push_back(k);
    groups.push_back(
        {{"time", group_times[g]}, {"text", video_timestamp_text(group_times[g])}, {"frames", std::move(members)}});
  }
  json out = {{"object", "qvl.video"},
              {"width", video->width},
              {"height", video->height},
              {"fps", video->fps},
              {"total_frames", video->total_frames},
              {"duration", static_cast<double>(video->total_frames) / video->fps},
              {"container", video->container},
              {"codec", video->codec},
              {"video_tokens", video_tokens},
              {"thumbnail_size", request.thumbnail_size},
              {"frames", std::move(frames)},
              {"groups", std::move(groups)}};
  if (thumbnails_stopped) out["thumbnails_stopped"] = "the image time limit (--image-time-limit) was reached";
  return out;
}

}  // namespace qvl
