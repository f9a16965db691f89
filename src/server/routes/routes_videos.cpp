// POST /v1/qvl/videos/frames (video_frames.h): a clip's sampled frames, their
// times and thumbnails, and its token cost, for a client showing what the
// model will see.
#include "server/routes/route_groups.h"
#include "server/media/video_frames.h"

namespace qvl {

namespace {

// The video tokens of `video` in a chat request, counted by the engine itself
// (Engine::prompt_size) so the figure is the engine's resize rule for videos
// and cannot drift from it.
int64_t video_tokens(Engine& engine, const std::shared_ptr<const Video>& video) {
  GenerateRequest r;
  r.messages.push_back(Message{"user", {MessagePart{"", nullptr, video}}, {}});
  try {
    return engine.prompt_size(r).image_tokens;
  } catch (const Error& e) {  // the processor refuses the size (an extreme aspect ratio, a side under 32 px)
    throw ApiError(400, "invalid_video", cat("the video cannot be used: ", e.what()), "video");
  }
}

}  // namespace

void MediaPreviewRoutes::register_video_routes(HttpRouter& router) const {
  router.post("/v1/qvl/videos/frames", [this](HttpRequest& req, HttpResponse& res) {
    auto rec = kit.record(req);
    try {
      const VideoFramesRequest r = parse_video_frames_request(kit.parse_body(req));
      const nlohmann::json out = video_frames_json(r, chat_limits, &memory_admission,
                                                   [&](const auto& video) { return video_tokens(*engine, video); });
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["frames"] = out["frames"].size();
        rec->fields["video_tokens"] = out["video_tokens"];
      }
      reply_json(res, 200, out);
    } catch (const ApiError& e) {
      kit.refuse(res, *rec, e);
    }
  });
}

}  // namespace qvl
