#include "server/documents/document_input.h"

#include <cmath>

#include "server/requests/api_error.h"
#include "server/media/media.h"
#include "util/error.h"

namespace qvl {
namespace {

std::string mpx(int64_t pixels) { return cat(std::round(pixels / 1e5) / 10, " Mpx"); }

}  // namespace

std::string page_selection(const RequestField& pages) {
  std::string out;
  // A single page may come as a number.
  if (pages.value().is_number_integer()) out = std::to_string(pages.value().get<int64_t>());
  else if (pages.value().is_string()) out = pages.string();
  else pages.wrong_type("a string of pages like \"1-3,7\"");
  if (out.size() > 1024) pages.refuse(cat("'", pages.path(), "' is longer than 1024 characters"));
  return out;
}

MediaSource parse_file_part(const RequestField& file, const PdfLimits& limits, bool typed_part) {
  const std::string& param = file.path();
  for (auto it = file.object().value().begin(); it != file.value().end(); ++it) {
    const std::string& k = it.key();
    if (k == "file_id")
      bad_request(file.path_of(k),
                  cat("'", file.path_of(k), "' is not supported (qvl has no Files API); send the PDF in 'file_data' as "
                      "data:application/pdf;base64,..."),
                  "unsupported_parameter");
    if (k != "file_data" && k != "filename" && k != "pages" && k != "dpi" && !(typed_part && k == "type"))
      bad_request(file.path_of(k),
                  cat("unknown field '", k.substr(0, 80), "' in '", param, "' (file_data, filename, pages and dpi are)"),
                  "unsupported_parameter");
  }
  MediaSource d;
  d.hint = MediaKind::Pdf;
  d.param = param;
  d.url_param = file.path_of("file_data");
  const std::optional<RequestField> data = file.find("file_data");
  if (!data) bad_request(d.url_param, cat("'", d.url_param, "' is required (data:application/pdf;base64,...)"),
                         "missing_field");
  d.url = data->string();
  file.optional_string("filename");
  d.pages_param = file.path_of("pages");
  if (const std::optional<RequestField> pages = file.find("pages")) {
    d.pages = page_selection(*pages);
    d.pdf_fields = true;
  }
  if (auto dpi = file.number("dpi", limits.min_dpi, limits.max_dpi)) {
    d.dpi = *dpi;
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
