// PDF input of the chat parser: a `file` part (OpenAI's {"type": "file",
// "file": {"file_data": "data:application/pdf;base64,…"}}) or a PDF data: URL
// in an image_url part becomes the document's pages, rendered and put into
// the prompt as image parts, in order, in place of the part.
//
// The work comes in the same order as images' (chat_request.h): the part is
// only read while the body is parsed; once every field is valid the PDFs are
// opened and their pages chosen and sized (plan_pages), so a bad, encrypted
// or oversized file and too many pages are refused before any image is
// decoded or any page rendered; the pages are rendered last, each through
// the image admission with its pixels reserved from the plan.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "pdf/pdf_document.h"
#include "pdf/pdf_pages.h"
#include "server/chat_request.h"
#include "server/request_fields.h"

namespace qvl {

class MediaIntake;

// A document part as the body gave it; its pages go to message `message`,
// replacing part `part`.
struct DocumentSource {
  size_t message = 0, part = 0;
  std::string url;        // a data: URL (or any URL the media options allow)
  std::string url_param;  // "messages[0].content[1].file.file_data"
  std::string param;      // "messages[0].content[1].file": the part, named by refusals of its pages
  std::string pages;      // "1-3,7"; empty: every page
  std::string pages_param;
  double dpi = kDefaultPdfDpi;
};

// data:application/pdf[;…],…: an image_url that holds a PDF.
bool is_pdf_data_url(std::string_view url);

// A page selection as sent ("1-3,7", or one page as a number), at most 1024
// characters; source_pages reads it against the document.
std::string page_selection(const RequestField& pages);

// A file part's "file" object: file_data (required), filename (ignored),
// and qvl's "pages" and "dpi"; file_id and any other key are refused naming
// them, by paths below the object's ("messages[0].content[1].file.dpi").
// typed_part: the object is a Responses input_file part, whose "type" is its
// own. The message and part indices are the caller's. Throws ApiError (400).
DocumentSource parse_file_part(const RequestField& file, const PdfLimits& limits, bool typed_part = false);

// The source's PDF fetched and opened, the file capped like any image file
// (limits.media.max_image_bytes): 400 invalid_pdf naming source.url_param
// when it is no PDF, truncated, corrupt or encrypted.
PdfDocument open_source_pdf(const DocumentSource& source, const ChatLimits& limits);

// The pages source.pages chooses in `doc` (0-based, in the order written;
// every page when empty): 400 invalid_pages naming source.pages_param.
std::vector<int> source_pages(const DocumentSource& source, const PdfDocument& doc);

// A request's PDFs, opened and planned, nothing rendered yet.
class RequestDocuments {
 public:
  // Fetches and opens each PDF, chooses its pages and sizes them. Refuses
  // (ApiError) a file that is no PDF, corrupt, truncated or encrypted (400
  // invalid_pdf), a bad page selection (400 invalid_pages), more pages than
  // limits.media.pdf.max_pages across the request or pages over the pixel
  // caps (413), and pages that with the request's `other_images` come to
  // more than limits.max_images (400 too_many_images).
  RequestDocuments(std::vector<DocumentSource> sources, const ChatLimits& limits, int other_images);
  RequestDocuments(RequestDocuments&&) noexcept;
  ~RequestDocuments();

  int pages() const;

  // Renders every page through the request's media intake and puts them
  // into `request`'s messages, each document's pages in place of its part.
  // With an admission each page waits for a decode place and reserves its
  // rendering peak from the plan before Poppler allocates anything; the
  // reservation shrinks to the RGB pixels and travels with them. The time
  // limit is the intake's, from the request's first medium.
  void render_into(ChatRequest& request, MediaIntake& intake);

 private:
  struct Opened;
  std::vector<Opened> opened_;
};

}  // namespace qvl
