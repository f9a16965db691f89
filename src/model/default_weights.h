// The weight format qvl loads when none is asked for: one rule, applied in
// Engine::create, which every front end (qvl run/chat/serve/bench, the C
// API, the Python package) goes through, so the same question gets the same
// answer whichever asks it (docs/weights.md).
//
// The most exact format whose matrices take at most half the machine's
// memory: bf16 as published (what the reference answers are computed with)
// when the checkpoint fits; else q8 (34 bytes per 32 weights, 0.53x bf16);
// else q4 (18 bytes per 32, 0.28x), the smallest qvl has. Half, because the
// rest holds the KV cache, the vision tower's activations, the OS and the
// page cache. On a 24 GB machine: 2B and 4B bf16, 8B (17.5 GB) q8, 32B and
// 30B-A3B q4.
//
// An FP8 checkpoint (config.json quantization_config) starts at q8: its
// weights are dequantized anyway and bf16 cannot hold FP8 × scale exactly
// (11 significant bits), while q8 keeps its memory at the download's size
// (34 bytes per 32 one-byte weights) instead of doubling it.
#pragma once

#include <cstdint>
#include <string>

#include "util/formats.h"

namespace qvl {

// checkpoint_bytes: the safetensors files' bytes; fp8: an FP8 checkpoint.
WeightFormat default_weight_format(uint64_t checkpoint_bytes, uint64_t memory_bytes, bool fp8 = false);

// Physical memory, or the cgroup (v2) memory.max when that is lower (a
// container's limit); $QVL_MEMORY_BYTES overrides both (tests, and a user
// who wants to budget less than the whole machine).
uint64_t machine_memory_bytes();

// default_weight_format for the checkpoint of the model folder `model_dir`
// (its safetensors files' bytes) on this machine.
WeightFormat default_weight_format(const std::string& model_dir);

}  // namespace qvl
