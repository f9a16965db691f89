// The retrieval commands' inputs (qvl embed, qvl rerank): files and texts
// from the command line, or a JSON file of inputs in the official scripts'
// shape, turned into RetrievalInputs through the media intake that qvl run
// uses.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/retrieval.h"
#include "media/intake.h"
#include "pdf/pdf_pages.h"
#include "util/args.h"

namespace qvl::cli {

// One input with its label in the output ("text 2", "a.pdf page 3", "b.png").
struct LabelledInput {
  std::string source;
  RetrievalInput input;
};

class RetrievalInputs {
 public:
  RetrievalInputs(const PdfRenderRequest& pdf, const VideoOptions& video) : pdf_(pdf), video_(video) {}

  // An image file: one input; a PDF (known by its bytes): one input per page.
  std::vector<LabelledInput> image_file(const std::string& path);
  LabelledInput video_file(const std::string& path);
  // A JSON file: an array of inputs, each a string (a text) or an object
  // {"text", "image", "video", "instruction"} (each a value or a list; image
  // and video are file paths, relative to the JSON file's folder; a PDF
  // gives its pages as images of that one input).
  std::vector<LabelledInput> json_file(const std::string& path);
  // The same for one JSON value (`where` names it in errors).
  RetrievalInput json_input(const nlohmann::json& item, const std::string& base_dir, const std::string& where);

 private:
  // An image file's image, or a PDF's pages (their numbers, from 1, appended to *pages).
  std::vector<std::shared_ptr<const Image>> images_of(const std::string& path, std::vector<int>* pages = nullptr);
  MediaIntake intake_{MediaLimits{}};
  PdfRenderRequest pdf_;
  VideoOptions video_;
};

// The inputs on a command line, in the order given: each `text_flag` value a
// text, each `image_flag` file an image (a PDF: its pages, one input each),
// each `video_flag` file a video; then the items of the `inputs` JSON file.
std::vector<LabelledInput> command_line_inputs(Args& args, RetrievalInputs& reader,
                                               const std::vector<std::string>& texts,
                                               const std::vector<std::string>& images,
                                               const std::vector<std::string>& videos, const std::string& inputs,
                                               const char* text_flag, const char* image_flag, const char* video_flag);

// --min-pixels / --max-pixels are the chat models' range: refused, since the
// retrieval models resize as their scripts do (kRetrievalMinPixels …).
void refuse_chat_pixel_options(const Args& args, const char* command);

nlohmann::ordered_json retrieval_timings_json(const Timings& t);

}  // namespace qvl::cli
