#include "server/documents/page_batch.h"

#include "pdf/pdf_pages.h"
#include "server/requests/api_error.h"
#include "server/documents/document_input.h"
#include "server/requests/request_fields.h"
#include "util/error.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// A part of the body that holds a PDF, as found before anything is parsed.
struct FoundPdf {
  size_t message, part;
  std::string param;  // "messages[0].content[1]"
  bool file_part;     // {"type": "file"}; else an image_url whose bytes are a PDF
  std::vector<uint8_t> bytes;  // an image_url's, fetched to tell
};

std::optional<std::string> image_url_of(const RequestField& part) {
  std::optional<RequestField> iu = part.find("image_url");
  if (iu && !iu->value().is_string()) iu = iu->find("url");
  if (!iu || !iu->value().is_string()) return std::nullopt;
  return iu->string();
}

// File parts, and image_url parts whose bytes say PDF (media/kind.h): each
// image_url is fetched to tell.
std::vector<FoundPdf> find_pdfs(const RequestField& messages, const ChatLimits& limits) {
  std::vector<FoundPdf> found;
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::optional<RequestField> content = messages[i].find("content");
    if (!content || !content->value().is_array()) continue;
    for (size_t k = 0; k < content->size(); ++k) {
      const RequestField part = (*content)[k];
      const std::optional<RequestField> type = part.find("type");
      if (!type || !type->value().is_string()) continue;
      const std::string& param = part.path();
      if (type->value() == "file") {
        found.push_back({i, k, param, true});
      } else if (type->value() == "image_url" || type->value() == "input_image") {
        const std::optional<std::string> url = image_url_of(part);
        if (!url) continue;  // the chat parser says what is wrong
        MediaSource source;
        source.url = *url;
        source.url_param = param + ".image_url";
        std::vector<uint8_t> bytes = fetch_source_bytes(source, limits);
        if (media_kind(bytes, MediaKind::Image) == MediaKind::Pdf) found.push_back({i, k, param, false, std::move(bytes)});
      }
    }
  }
  return found;
}

}  // namespace

std::optional<PageBatchPlan> plan_page_batch(ojson& body, const ChatLimits& limits) {
  if (!body.is_object()) return std::nullopt;  // the chat parser says what is wrong
  auto it = body.find("per_page");
  if (it == body.end()) return std::nullopt;
  const ojson per_page = *it;
  body.erase(it);
  if (per_page.is_null()) return std::nullopt;
  if (!RequestField(per_page, "per_page").boolean()) return std::nullopt;

  const RequestField messages = RequestField(body).at("messages");
  std::vector<FoundPdf> found = find_pdfs(messages.array(), limits);
  if (found.size() != 1)
    bad_request("per_page",
                cat("'per_page' needs exactly one PDF in 'messages' (a file part, or an image_url whose bytes are a PDF) to "
                    "split into pages; the request has ",
                    found.size()));
  FoundPdf& at = found.front();
  const RequestField part = messages[at.message].at("content")[at.part];

  PageBatchPlan plan;
  plan.message = at.message;
  plan.part = at.part;
  MediaSource source;
  std::vector<uint8_t> bytes;
  if (at.file_part) {
    const RequestField file = part.at("file");
    source = parse_file_part(file, limits.media.pdf);
    plan.file = file.value();
    plan.file.erase("pages");
    bytes = fetch_source_bytes(source, limits);
  } else {
    source.url = *image_url_of(part);
    source.url_param = source.param = source.pages_param = at.param + ".image_url";
    plan.file = {{"file_data", source.url}};
    bytes = std::move(at.bytes);
  }

  // Opened, its pages chosen and counted (as one request's), and each page
  // sized alone, as its job will render it: one over the pixel cap even at
  // the lowest dpi is refused now rather than failing as a page later.
  MediaIntake intake(media_limits(limits));
  try {
    if (bytes.size() > limits.media.pdf.max_bytes)
      throw MediaTooLarge(MediaKind::Pdf, bytes.size(), limits.media.pdf.max_bytes);
    const PdfDocument doc = intake.open_pdf(bytes);
    const std::vector<int> chosen = intake.pdf_pages(doc, source.pages);
    intake.count_pdf_pages(static_cast<int64_t>(chosen.size()));
    for (int index : chosen) {
      intake.plan_pdf_page(doc, index, source.dpi);
      plan.pages.push_back(index + 1);
    }
  } catch (const MediaTooLarge& e) {
    refuse_too_large(e, source.url_param);
  } catch (const PdfRefusal& e) {
    refuse_pdf(e, source);
  }
  plan.body = std::move(body);
  return plan;
}

ojson page_body(const PageBatchPlan& plan, int page) {
  ojson body = plan.body;
  ojson file = plan.file;
  file["pages"] = std::to_string(page);
  body["messages"][plan.message]["content"][plan.part] = {{"type", "file"}, {"file", std::move(file)}};
  return body;
}

std::string page_batch_plan_text(const PageBatchPlan& plan) {
  const ojson j = {
      {"body", plan.body}, {"message", plan.message}, {"part", plan.part}, {"file", plan.file}, {"pages", plan.pages}};
  return j.dump();
}

PageBatchPlan page_batch_plan_parse(const std::string& text) {
  const ojson j = ojson::parse(text);
  PageBatchPlan plan;
  plan.body = j.at("body");
  plan.message = j.at("message").get<size_t>();
  plan.part = j.at("part").get<size_t>();
  plan.file = j.at("file");
  plan.pages = j.at("pages").get<std::vector<int>>();
  return plan;
}

std::string new_batch_id() {
  std::string id = new_job_id();  // "job-" + 32 hex digits
  return "batch-" + id.substr(4);
}

json batch_accepted_json(const BatchRecord& batch, const std::vector<int>& pages) {
  json jobs = json::array();
  for (size_t i = 0; i < pages.size(); ++i) jobs.push_back({{"page", pages[i]}, {"id", batch.job_ids[i]}});
  return {{"id", batch.id},         {"object", "qvl.job_batch"}, {"created", batch.created},
          {"model", batch.model},   {"status", "queued"},        {"pages", pages},
          {"jobs", std::move(jobs)}};
}

json batch_status_json(const BatchRecord& batch, const std::vector<int>& pages,
                       const std::function<json(const std::string& id)>& status_of) {
  json results = json::array();
  size_t ended = 0, started = 0, succeeded = 0, failed = 0;
  for (size_t i = 0; i < batch.job_ids.size(); ++i) {
    const json s = status_of(batch.job_ids[i]);
    json r = {{"page", i < pages.size() ? pages[i] : 0}, {"id", batch.job_ids[i]}};
    if (s.is_null()) {  // evicted from a full store after it finished, or past its TTL
      r["status"] = "expired";
      r["error"] =
          ApiError(404, "job_not_found", "the page's job is no longer kept (--job-ttl, --max-jobs)").to_json()["error"];
    } else {
      r["status"] = s["status"];
      // A running page's answer so far ({"tokens", "text"}): a client shows
      // each page's text as it comes by polling the batch.
      if (s.contains("progress")) r["progress"] = s["progress"];
      if (s.contains("result")) r["result"] = s["result"];
      if (s.contains("error")) r["error"] = s["error"];
    }
    const std::string status = r["status"];
    if (status != "queued") ++started;
    if (status == "succeeded") ++succeeded;
    if (status == "failed" || status == "expired") ++failed;
    if (status != "queued" && status != "running") ++ended;
    results.push_back(std::move(r));
  }
  const size_t total = batch.job_ids.size();
  std::string status = "queued";
  if (ended == total) status = succeeded == total ? "succeeded" : failed > 0 ? "failed" : "cancelled";
  else if (started > 0) status = "running";
  return {{"id", batch.id},
          {"object", "qvl.job_batch"},
          {"created", batch.created},
          {"model", batch.model},
          {"status", status},
          {"progress", {{"done", ended}, {"total", total}}},
          {"results", std::move(results)}};
}

}  // namespace qvl
