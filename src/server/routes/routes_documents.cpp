// POST /v1/qvl/documents/pages (document_pages.h): a PDF's pages, their
// sizes and token costs, and thumbnails, for a client choosing pages.
#include "server/documents/document_pages.h"
#include "server/routes/route_groups.h"

namespace qvl {

namespace {

// The image tokens of a page of width x height px in a chat request with
// this pixel range, counted by the engine itself (Engine::prompt_size) so
// the figure is the engine's resize rule, --max-image-pixels included, and
// cannot drift from it. The page's pixels do not exist yet: the stand-in
// declares the page's size the way a JPEG decoded at a reduced DCT scale
// declares its full size, which is all the count reads.
int64_t page_image_tokens(Engine& engine, int64_t width, int64_t height, int64_t min_pixels, int64_t max_pixels) {
  auto stand_in = std::make_shared<Image>();
  stand_in->width = stand_in->height = 1;
  stand_in->rgb.assign(3, 255);
  stand_in->full_width = static_cast<int>(width);
  stand_in->full_height = static_cast<int>(height);
  GenerateRequest r;
  r.min_pixels = min_pixels;
  r.max_pixels = max_pixels;
  r.messages.push_back(Message{"user", {MessagePart{"", std::move(stand_in)}}, {}});
  try {
    return engine.prompt_size(r).image_tokens;
  } catch (const Error& e) {  // the processor refuses the size (an extreme aspect ratio)
    throw ApiError(400, "invalid_prompt", cat("a page of ", width, " x ", height, " px cannot be an image: ", e.what()),
                   "file_data");
  }
}

}  // namespace

void MediaPreviewRoutes::register_document_routes(HttpRouter& router) const {
  router.post("/v1/qvl/documents/pages", [this](HttpRequest& req, HttpResponse& res) {
    auto rec = kit.record(req);
    try {
      const DocumentPagesRequest r = parse_document_pages_request(kit.parse_body(req), chat_limits.media.pdf);
      const nlohmann::json out =
          document_pages_json(r, chat_limits, &memory_admission, [&](int64_t width, int64_t height) {
            return page_image_tokens(*engine, width, height, r.min_pixels, r.max_pixels);
          });
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["pages"] = out["pages"];
      }
      reply_json(res, 200, out);
    } catch (const ApiError& e) {
      kit.refuse(res, *rec, e);
    }
  });
}

}  // namespace qvl
