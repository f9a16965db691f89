// Per-page jobs (POST /v1/jobs with qvl's "per_page": true): a chat body
// holding exactly one PDF runs as one job per chosen page, each job the same
// body with the PDF part replaced by that single page, so a page's job costs
// exactly what a chat request with that page alone costs.
//
// This file holds what a batch is and says: the plan made from the body
// (which part is the PDF, which pages, refusals before anything is queued),
// the single-page bodies, and the batch's status object built from its page
// jobs' statuses in the JobStore. job_runner.h runs the pages as it runs
// any stored job.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "server/requests/chat_request.h"
#include "server/replies/completion_json.h"
#include "server/jobs/job_store.h"  // BatchRecord

namespace qvl {

// Where the body's one PDF is and what its pages are.
struct PageBatchPlan {
  nlohmann::ordered_json body;   // the request without "per_page"; its PDF part is replaced per page
  size_t message = 0, part = 0;  // body["messages"][message]["content"][part] is the PDF
  nlohmann::ordered_json file;   // the file object a page's part carries: file_data, dpi, filename (no pages)
  std::vector<int> pages;        // 1-based, in the order the selection gives them
};

// Reads "per_page" (a boolean; nullopt when absent or false: an ordinary
// job) and, when true, finds the body's one PDF (a file part, or an
// image_url whose bytes are a PDF: each is fetched to tell), opens it and
// checks its pages through a media intake as a chat request's PDF is
// checked, one page at a time: 400 naming per_page without exactly one
// PDF, 400 invalid_pdf / invalid_pages naming the part's fields, 413
// too_many_pages over limits.media.pdf.max_pages (--max-pdf-pages), 413
// pdf_too_large for a page over the pixel cap even at the lowest dpi.
// Nothing is rendered. `body` loses "per_page" either way.
std::optional<PageBatchPlan> plan_page_batch(nlohmann::ordered_json& body, const ChatLimits& limits);

// The chat body of one page (1-based): the plan's body with the PDF part
// replaced by {"type": "file", "file": {…, "pages": "<page>"}}.
nlohmann::ordered_json page_body(const PageBatchPlan& plan, int page);

// A page (or any job) prepared for the queue: its task (not yet submitted)
// and what its completion object needs.
struct PreparedPage {
  std::shared_ptr<Task> task;
  ResponseMeta meta;
};

// The plan as stored with the batch (BatchRecord::plan) and back.
std::string page_batch_plan_text(const PageBatchPlan& plan);
PageBatchPlan page_batch_plan_parse(const std::string& text);

// A new batch id ("batch-" + 32 hex digits from the OS's random source).
std::string new_batch_id();

// The 202 answer: {"id", "object": "qvl.job_batch", "status": "queued",
// "pages": [...], "jobs": [{"page", "id"}, ...]}.
nlohmann::json batch_accepted_json(const BatchRecord& batch, const std::vector<int>& pages);

// GET /v1/jobs/{batch id}: {"id", "object", "created", "model", "status",
// "progress": {"done", "total"}, "results": [{"page", "id", "status",
// "progress" (running: {"tokens", "text"} so far) | "result" | "error"},
// ...]} in the batch's page order, from the page jobs'
// status objects (`status_of` gives one, or null when it is gone). status:
// queued until a page starts, running until every page has ended, then
// succeeded (all did), failed (any failed or expired) or cancelled.
nlohmann::json batch_status_json(const BatchRecord& batch, const std::vector<int>& pages,
                                 const std::function<nlohmann::json(const std::string& id)>& status_of);

}  // namespace qvl
