// What `qvl info` tells of a model folder without loading the model: its
// configuration, the checkpoint checked against the tensors config.json
// implies (names, shapes, FP8 block scales) and counted, and per weight format
// what the weights take. A folder with config.json and no weights (a model
// not downloaded, or too big for this machine) is summarised from
// config.json alone. The front ends read this instead of model/ internals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "io/checkpoint_layout.h"
#include "io/model_config.h"
#include "model/weight_footprint.h"
#include "util/formats.h"

namespace qvl {

struct ModelSummary {
  std::string dir;
  ModelConfig config;
  std::optional<PreprocessorConfig> preprocessor;  // absent only without weights (config.json alone)
  std::vector<int> eos_token_ids;
  std::string chat_template_path;
  bool has_weights = true;  // false: the figures come from config.json alone
  ParameterCounts params;
  std::set<std::string> dtypes;
  std::vector<std::string> weight_files;
  size_t weight_bytes = 0, folder_bytes = 0;
  uint64_t checkpoint_bytes_from_config = 0;  // the checkpoint as published, from config.json's shapes
  size_t tensors = 0;
  std::vector<std::string> unexpected;  // in the checkpoint, not implied by config.json
  ExpertLayout experts = ExpertLayout::Fused;
  size_t fp8_tensors = 0;               // F8_E4M3 weights (each with a _scale_inv)
  std::set<std::string> scale_dtypes;   // of their block scales
  WeightFormat default_format = WeightFormat::BF16;
  uint64_t memory_bytes = 0;            // this machine's, for the default rule

  // Per weight format (bf16, q8, q4), what the matrices take, what one decode
  // step reads and the weights in memory (model/weight_footprint.h, from config.json).
  struct Format {
    WeightFormat format;
    FormatFootprint footprint;
  };
  std::vector<Format> formats;
};

// Throws qvl::Error naming the file (and tensor) when the folder is not one
// qvl can run.
ModelSummary summarize_model_folder(const std::string& dir);

}  // namespace qvl
