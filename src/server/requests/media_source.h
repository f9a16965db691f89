// A chat body's media as parse_chat_request leaves them: where each part's
// bytes are and how the part names them, nothing fetched or decoded yet.
// take_chat_media (chat_media.h) fetches and decodes them afterwards, so
// parsing does no I/O and a request refused for any field costs no media work.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "media/intake.h"

namespace qvl {

// An image_url part or a file part. Its bytes decide what it is (an image,
// a PDF whose pages replace the part, or a clip); `hint` says what the part
// type promised, for bytes that say nothing (media/kind.h).
struct MediaSource {
  size_t message = 0, part = 0;  // the part it fills: messages[message].parts[part]
  MediaKind hint = MediaKind::Image;
  std::string url;        // a data: URL (or any URL the media options allow)
  std::string url_param;  // "messages[0].content[1].file.file_data"
  std::string param;      // "messages[0].content[1].file": the part, named by refusals of its pages
  std::string pages;      // a PDF's pages, "1-3,7"; empty: every page
  std::string pages_param;
  double dpi = kDefaultPdfDpi;
  bool pdf_fields = false;  // pages or dpi were given: refused unless the bytes are a PDF
};

// A video part whose URLs are known and whose frames are not yet.
struct PendingVideo {
  size_t message = 0, part = 0;
  std::vector<std::string> urls;  // one clip, or the frames of a frame list
  std::vector<std::string> url_params;
  std::string param;              // the part ("messages[0].content[1]")
  bool frame_list = false;
  double sample_fps = 2.0;        // frame list: frames per second they were taken at
  VideoOptions options;
};

// Every medium of a request, in the order of the body.
struct PendingMedia {
  std::vector<MediaSource> sources;
  std::vector<PendingVideo> videos;
  VideoOptions video_defaults;  // mm_processor_kwargs: a clip sent in an image_url is sampled by them
};

}  // namespace qvl
