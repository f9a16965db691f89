#include "cli/retrieval_inputs.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

std::vector<std::string> strings_of(const nlohmann::json& v, const std::string& where) {
  std::vector<std::string> out;
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) fail(where, " must be a string or an array of strings");
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) fail(where, "[", i, "] is not a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

}  // namespace

std::vector<std::shared_ptr<const Image>> RetrievalInputs::images_of(const std::string& path,
                                                                     std::vector<int>* pages) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_media_bytes(path, std::max(intake_.limits().image.max_encoded_bytes, intake_.limits().pdf.max_bytes));
  } catch (const Error& e) {
    fail("image ", path, ": ", e.what());
  }
  try {
    if (is_pdf(bytes)) {
      MediaIntake::PlannedPdf planned = intake_.plan_pdf(bytes, pdf_);
      std::vector<std::shared_ptr<const Image>> out;
      for (const PdfPagePlan& page : planned.pages) {
        out.push_back(intake_.pdf_page(planned.doc, page, path));
        if (pages) pages->push_back(page.index + 1);
      }
      return out;
    }
    return {intake_.image(bytes, path)};
  } catch (const Error& e) {
    fail(is_pdf(bytes) ? "PDF " : "image ", path, ": ", e.what());
  }
}

std::vector<LabelledInput> RetrievalInputs::image_file(const std::string& path) {
  std::vector<int> pages;  // a PDF's page numbers
  std::vector<std::shared_ptr<const Image>> images = images_of(path, &pages);
  std::vector<LabelledInput> out;
  for (size_t i = 0; i < images.size(); ++i) {
    LabelledInput in;
    in.source = pages.empty() ? path : cat(path, " page ", pages[i]);
    in.input.images.push_back(std::move(images[i]));
    out.push_back(std::move(in));
  }
  return out;
}

LabelledInput RetrievalInputs::video_file(const std::string& path) {
  LabelledInput in;
  in.source = path;
  try {
    in.input.videos.push_back(intake_.video(read_media_bytes(path, intake_.limits().video.max_encoded_bytes), video_, path));
  } catch (const Error& e) {
    fail("video ", path, ": ", e.what());
  }
  return in;
}

RetrievalInput RetrievalInputs::json_input(const nlohmann::json& item, const std::string& base_dir,
                                           const std::string& where) {
  RetrievalInput in;
  if (item.is_string()) {
    in.texts.push_back(item.get<std::string>());
    return in;
  }
  if (!item.is_object()) fail(where, " must be a string or an object {text, image, video, instruction}");
  auto file = [&](const std::string& p) { return (std::filesystem::path(base_dir) / p).string(); };
  for (const auto& [key, value] : item.items()) {
    const std::string at = cat(where, ".", key);
    if (key == "text") {
      in.texts = strings_of(value, at);
    } else if (key == "image") {
      for (const std::string& p : strings_of(value, at))
        for (auto& img : images_of(file(p))) in.images.push_back(std::move(img));
    } else if (key == "video") {
      for (const std::string& p : strings_of(value, at)) in.videos.push_back(video_file(file(p)).input.videos[0]);
    } else if (key == "instruction") {
      if (!value.is_string()) fail(at, " must be a string");
      in.instruction = value.get<std::string>();
    } else {
      fail(where, " has the key '", key, "'; an input takes text, image, video and instruction");
    }
  }
  return in;
}

std::vector<LabelledInput> RetrievalInputs::json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot open ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    fail(path, " is not JSON (byte ", e.byte, ")");
  }
  if (!j.is_array()) fail(path, " must hold a JSON array of inputs");
  const std::string base = std::filesystem::path(path).parent_path().string();
  std::vector<LabelledInput> out;
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back({cat(path, "[", i, "]"), json_input(j[i], base.empty() ? "." : base, cat(path, "[", i, "]"))});
  return out;
}

nlohmann::ordered_json retrieval_timings_json(const Timings& t) {
  return {{"preprocess_ms", t.preprocess_ms}, {"vision_ms", t.vision_ms}, {"prefill_ms", t.prefill_ms},
          {"prefill_tokens", t.prefill_tokens}};
}


std::vector<LabelledInput> command_line_inputs(Args& args, RetrievalInputs& reader,
                                               const std::vector<std::string>& texts,
                                               const std::vector<std::string>& images,
                                               const std::vector<std::string>& videos, const std::string& inputs,
                                               const char* text_flag, const char* image_flag, const char* video_flag) {
  std::vector<LabelledInput> out;
  size_t t = 0, i = 0, v = 0;
  for (const std::string& name : args.given_order()) {
    if (name == text_flag) {
      out.push_back({cat("text ", t + 1), {}});
      out.back().input.texts.push_back(texts[t++]);
    } else if (name == image_flag) {
      for (LabelledInput& in : reader.image_file(images[i++])) out.push_back(std::move(in));
    } else if (name == video_flag) {
      out.push_back(reader.video_file(videos[v++]));
    }
  }
  if (!inputs.empty())
    for (LabelledInput& in : reader.json_file(inputs)) out.push_back(std::move(in));
  return out;
}

void refuse_chat_pixel_options(const Args& args, const char* command) {
  for (const char* flag : {"min-pixels", "max-pixels"})
    if (args.has(flag))
      throw UsageError(cat(command, ": --", flag, " does not apply: the retrieval models resize every image to ",
                           kRetrievalMinPixels, " ... ", kRetrievalMaxPixels,
                           " pixels, as their official scripts do"));
}

}  // namespace qvl::cli
