// What a model folder is used for. Qwen3-VL-Embedding and Qwen3-VL-Reranker
// checkpoints say Qwen3VLForConditionalGeneration in config.json like the
// chat models, so the use comes from the user (--task, as vLLM's --runner)
// or from the script the folder ships (the official repos carry
// scripts/qwen3_vl_embedding.py or scripts/qwen3_vl_reranker.py), never from
// a guess that could be silently wrong.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace qvl {

enum class ModelTask { Chat, Embed, Rerank };

const char* task_name(ModelTask task);  // "chat", "embed", "rerank"
// nullopt for any other name.
std::optional<ModelTask> parse_task(std::string_view name);

// Embed or Rerank when the folder ships that script; nullopt when it ships
// neither. Throws when it ships both (the folder cannot say which it is).
std::optional<ModelTask> shipped_task(const std::string& model_dir);

// The task a front end serves: `asked` when given, else what the folder
// ships, else chat.
ModelTask served_task(std::optional<ModelTask> asked, const std::string& model_dir);

// For a command that needs `wanted` (qvl embed, qvl rerank): fine when asked
// for it or when the folder ships it; otherwise throws saying what the folder
// is and how to use it anyway (--task).
void require_task(ModelTask wanted, std::optional<ModelTask> asked, const std::string& model_dir);

}  // namespace qvl
