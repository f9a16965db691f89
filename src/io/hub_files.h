// Which files of a model repo qvl downloads: the configs, the tokenizer, the
// chat template and the safetensors weights (one file, or an index and the
// shards it names). Nothing else (no .bin/.pt copies, README, images).
#pragma once

#include <string>
#include <vector>

namespace qvl::hub {

inline constexpr const char* kWeightsFile = "model.safetensors";
inline constexpr const char* kIndexFile = "model.safetensors.index.json";

bool is_wanted_file(const std::string& name);  // one of the fixed names above

// The wanted files present in a repo listing, small files first (the index
// before the weights). With both an index and model.safetensors the index
// wins, as the safetensors reader prefers it.
std::vector<std::string> select_files(const std::vector<std::string>& listing);

// The shard files an index's "weight_map" names, unique and sorted. Throws
// qvl::Error naming `source` on bad JSON or a name that escapes the folder.
std::vector<std::string> index_shards(const std::string& json_text, const std::string& source);

// A relative path that stays inside its folder: no "..", no leading "/", no
// backslash, no empty component.
bool is_safe_relative_path(const std::string& path);

}  // namespace qvl::hub
