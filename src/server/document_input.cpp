#include "server/document_input.h"

#include <cmath>

#include "server/api_error.h"
#include "server/media.h"
#include "util/error.h"

namespace qvl {
namespace {

using json = nlohmann::ordered_json;

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const std::string& param, const char* want) {
  bad_request(param, cat("'", param, "' must be ", want), "invalid_type");
}

std::string mpx(int64_t pixels) { return cat(std::round(pixels / 1e5) / 10, " Mpx"); }

}  // namespace

MediaSource parse_file_part(const json& file, const std::string& param, const PdfLimits& limits) {
  if (!file.is_object()) wrong_type(param, "an object");
  for (auto it = file.begin(); it != file.end(); ++it) {
    const std::string& k = it.key();
    if (k == "file_id")
      bad_request(param + ".file_id",
                  cat("'", param, ".file_id' is not supported (qvl has no Files API); send the PDF in 'file_data' as "
                      "data:application/pdf;base64,..."),
                  "unsupported_parameter");
    if (k != "file_data" && k != "filename" && k != "pages" && k != "dpi")
      bad_request(param + "." + k,
                  cat("unknown field '", k.substr(0, 80), "' in '", param, "' (file_data, filename, pages and dpi are)"),
                  "unsupported_parameter");
  }
  MediaSource d;
  d.hint = MediaKind::Pdf;
  d.param = param;
  d.url_param = param + ".file_data";
  const json* data = field(file, "file_data");
  if (!data) bad_request(d.url_param, cat("a file part needs '", d.url_param, "' (data:application/pdf;base64,...)"),
                         "missing_field");
  if (!data->is_string()) wrong_type(d.url_param, "a string");
  d.url = data->get<std::string>();
  if (const json* name = field(file, "filename"); name && !name->is_string()) wrong_type(param + ".filename", "a string");
  d.pages_param = param + ".pages";
  if (const json* pages = field(file, "pages")) {
    // A single page may come as a number.
    if (pages->is_number_integer()) d.pages = std::to_string(pages->get<int64_t>());
    else if (pages->is_string()) d.pages = pages->get<std::string>();
    else wrong_type(d.pages_param, "a string of pages like \"1-3,7\"");
    if (d.pages.size() > 1024) bad_request(d.pages_param, cat("'", d.pages_param, "' is longer than 1024 characters"));
    d.pdf_fields = true;
  }
  if (const json* dpi = field(file, "dpi")) {
    const std::string p = param + ".dpi";
    if (!dpi->is_number()) wrong_type(p, "a number");
    d.dpi = dpi->get<double>();
    if (!std::isfinite(d.dpi) || d.dpi < limits.min_dpi || d.dpi > limits.max_dpi)
      bad_request(p, cat("'", p, "' must be in [", limits.min_dpi, ", ", limits.max_dpi, "], got ", dpi->dump()));
    d.pdf_fields = true;
  }
  return d;
}

std::vector<uint8_t> fetch_source_bytes(const MediaSource& source, const ChatLimits& limits) {
  MediaOptions any_kind = limits.media;  // the kind's own cap is checked once the bytes say what they are
  any_kind.max_image_bytes = max_media_bytes(media_limits(limits));
  return fetch_media_bytes(source.url, any_kind, source.url_param);
}

void refuse_pdf(const PdfRefusal& e, const MediaSource& s) {
  switch (e.why()) {
    case PdfRefusal::Why::Unreadable:
      bad_request(s.url_param, cat("the PDF cannot be used: ", e.what()), "invalid_pdf");
    case PdfRefusal::Why::Pages:
      bad_request(s.pages_param, cat("'", s.pages_param, "': ", e.what()), "invalid_pages");
    case PdfRefusal::Why::TooManyPages: {
      const std::string earlier = e.earlier_pages > 0 ? cat(" (", e.earlier_pages, " of them from earlier PDFs)") : std::string();
      throw ApiError(413, "too_many_pages",
                     cat("the request's PDFs come to ", e.pages, " pages", earlier, ", over the server's limit of ",
                         e.limit, " per request (--max-pdf-pages); choose pages with '",
                         s.pages_param, "'"),
                     s.pages.empty() ? s.param : s.pages_param);
    }
    case PdfRefusal::Why::TooLarge:
      if (e.pixels > 0)
        throw ApiError(413, "pdf_too_large",
                       cat("the request's PDF pages come to ", mpx(e.pixels), ", over the server's limit of ",
                           mpx(e.limit), " per request (--max-pdf-pixels); select fewer pages or a lower dpi"),
                       s.param);
      throw ApiError(413, "pdf_too_large", cat("the PDF's pages cannot be rendered: ", e.what()), s.param);
    case PdfRefusal::Why::OverBudget:
      throw ApiError(413, "image_too_large",
                     cat("rendering the request's ", e.pages, " PDF pages needs ", e.need, " bytes with its other images, "
                         "over the server's image memory budget of ", e.budget,
                         " bytes (what --memory-budget leaves beside the KV caches); select fewer pages or a lower dpi"),
                     s.param);
  }
  bad_request(s.url_param, cat("the PDF cannot be used: ", e.what()), "invalid_pdf");
}

}  // namespace qvl
