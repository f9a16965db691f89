#include "server/jobs/job_media.h"

#include <nlohmann/json.hpp>

#include "io/hub_sha.h"
#include "util/error.h"

namespace qvl {

using ojson = nlohmann::ordered_json;

namespace {

void detach(ojson& node, const ojson::json_pointer& at, DetachedMedia& out) {
  if (node.is_object()) {
    for (auto& [key, value] : node.items()) detach(value, at / key, out);
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) detach(node[i], at / i, out);
  } else if (node.is_string()) {
    const std::string& s = node.get_ref<const std::string&>();
    if (s.size() < kDetachedMediaMinBytes || s.compare(0, 5, "data:") != 0) return;
    hub::Sha256 sha;
    sha.update(s.data(), s.size());
    std::string hash = sha.hex();
    out.refs.push_back({at.to_string(), hash});
    out.blobs.try_emplace(std::move(hash), s);
    node = "";
  }
}

}  // namespace

DetachedMedia detach_media(const std::string& json_text) {
  if (json_text.empty()) return {};
  ojson j = ojson::parse(json_text);
  DetachedMedia out;
  detach(j, ojson::json_pointer(), out);
  out.text = out.refs.empty() ? json_text : j.dump();
  return out;
}

std::string attach_media(const std::string& json_text, const std::vector<MediaRef>& refs,
                         const std::map<std::string, std::string>& blobs) {
  if (refs.empty()) return json_text;
  ojson j = ojson::parse(json_text);
  for (const MediaRef& r : refs) {
    auto blob = blobs.find(r.hash);
    if (blob == blobs.end()) throw Error(cat("job store: the media ", r.hash, " of ", r.pointer, " is missing"));
    j[ojson::json_pointer(r.pointer)] = blob->second;
  }
  return j.dump();
}

DetachedAdd detach_add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) {
  DetachedAdd out;
  std::map<std::string, int64_t> files;
  auto count = [&](const DetachedMedia& d) {
    out.bytes += static_cast<int64_t>(d.text.size());
    for (const auto& [hash, data] : d.blobs) files.try_emplace(hash, static_cast<int64_t>(data.size()));
  };
  for (const JobRecord& j : jobs) count(out.bodies.emplace_back(detach_media(j.body)));
  if (batch) count(*(out.plan = detach_media(batch->plan)));
  for (const auto& [hash, size] : files) out.bytes += size;
  return out;
}

}  // namespace qvl
