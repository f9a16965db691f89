// Media once: the durable job stores keep a job's images, videos and PDFs
// (its data: URLs) apart from its body, once per content (SHA-256), however
// many jobs, pages or replicas send the same file. A body is stored with
// each large data: URL cut out (its place left as ""), and where each one
// was (a JSON pointer) with its hash; the runner gets the body whole again
// when it claims the job, and decodes the media then, through the same
// memory admission (media/admission.h) as any request. Polls never read the
// media.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "server/jobs/job_store.h"

namespace qvl {

// Smaller data: URLs stay in the body (a reference would cost about as much).
constexpr size_t kDetachedMediaMinBytes = 1024;

struct MediaRef {
  std::string pointer;  // RFC 6901 JSON pointer to the string in the body
  std::string hash;     // lower-case hex SHA-256 of the data: URL's text
};

struct DetachedMedia {
  std::string text;                          // the JSON, each cut-out string left as ""
  std::vector<MediaRef> refs;                // in document order
  std::map<std::string, std::string> blobs;  // hash -> the data: URL (each content once)
};

// Cuts the data: URLs of at least kDetachedMediaMinBytes out of a JSON text
// (any string value, at any depth); "" stays "". Throws nlohmann's parse
// error on bad JSON.
DetachedMedia detach_media(const std::string& json_text);

// Puts them back: `blobs` gives each ref's data: URL by its hash (Error
// naming a ref whose media is missing). Keys keep their order.
std::string attach_media(const std::string& json_text, const std::vector<MediaRef>& refs,
                         const std::map<std::string, std::string>& blobs);

// What a store's add() keeps: the jobs' bodies and the batch's plan with
// their media cut out, and the bytes they take (each distinct file once).
struct DetachedAdd {
  std::vector<DetachedMedia> bodies;  // one per job, in order
  std::optional<DetachedMedia> plan;  // with a batch
  int64_t bytes = 0;
};
DetachedAdd detach_add(const std::vector<JobRecord>& jobs, const BatchRecord* batch);

}  // namespace qvl
