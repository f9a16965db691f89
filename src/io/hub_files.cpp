#include "io/hub_files.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace qvl::hub {
namespace {

// Download order: what a reader needs first, the weights last.
constexpr const char* kWanted[] = {
    "config.json",           "generation_config.json", "preprocessor_config.json",
    "chat_template.json",    "chat_template.jinja",    "tokenizer_config.json",
    "tokenizer.json",
    // What the Qwen3-VL-Embedding / -Reranker repos ship beside the weights:
    // how qvl knows the folder's task (io/model_task.h).
    "scripts/qwen3_vl_embedding.py", "scripts/qwen3_vl_reranker.py",
    kIndexFile,               kWeightsFile,
};

}  // namespace

bool is_wanted_file(const std::string& name) {
  return std::find(std::begin(kWanted), std::end(kWanted), name) != std::end(kWanted);
}

std::vector<std::string> select_files(const std::vector<std::string>& listing) {
  std::set<std::string> present(listing.begin(), listing.end());
  std::vector<std::string> out;
  for (const char* name : kWanted) {
    if (!present.count(name)) continue;
    if (std::string(name) == kWeightsFile && present.count(kIndexFile)) continue;
    out.push_back(name);
  }
  return out;
}

bool is_safe_relative_path(const std::string& path) {
  if (path.empty() || path.front() == '/' || path.find('\\') != std::string::npos ||
      path.find('\0') != std::string::npos)
    return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::vector<std::string> index_shards(const std::string& json_text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail(source, ": not valid JSON");
  auto it = j.find("weight_map");
  if (it == j.end() || !it->is_object()) fail(source, ": field \"weight_map\" missing or not an object");
  std::set<std::string> shards;
  for (auto& [tensor, file] : it->items()) {
    if (!file.is_string()) fail(source, ": weight_map[\"", tensor, "\"] is not a file name");
    std::string name = file.get<std::string>();
    if (!is_safe_relative_path(name)) fail(source, ": weight_map[\"", tensor, "\"] names an unsafe path '", name, "'");
    shards.insert(name);
  }
  if (shards.empty()) fail(source, ": \"weight_map\" is empty");
  return {shards.begin(), shards.end()};
}

}  // namespace qvl::hub
