#include "io/model_task.h"

#include <filesystem>

#include "util/error.h"

namespace qvl {
namespace {

constexpr const char* kEmbeddingScript = "scripts/qwen3_vl_embedding.py";
constexpr const char* kRerankerScript = "scripts/qwen3_vl_reranker.py";

}  // namespace

const char* task_name(ModelTask task) {
  switch (task) {
    case ModelTask::Chat: return "chat";
    case ModelTask::Embed: return "embed";
    case ModelTask::Rerank: return "rerank";
  }
  return "?";
}

std::optional<ModelTask> parse_task(std::string_view name) {
  for (ModelTask t : {ModelTask::Chat, ModelTask::Embed, ModelTask::Rerank})
    if (name == task_name(t)) return t;
  return std::nullopt;
}

std::optional<ModelTask> shipped_task(const std::string& model_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool embed = fs::is_regular_file(fs::path(model_dir) / kEmbeddingScript, ec);
  const bool rerank = fs::is_regular_file(fs::path(model_dir) / kRerankerScript, ec);
  if (embed && rerank)
    fail("model folder ", model_dir, " ships both ", kEmbeddingScript, " and ", kRerankerScript,
         ", so it does not say what it is: pass --task embed or --task rerank");
  if (embed) return ModelTask::Embed;
  if (rerank) return ModelTask::Rerank;
  return std::nullopt;
}

ModelTask served_task(std::optional<ModelTask> asked, const std::string& model_dir) {
  if (asked) return *asked;
  return shipped_task(model_dir).value_or(ModelTask::Chat);
}

void require_task(ModelTask wanted, std::optional<ModelTask> asked, const std::string& model_dir) {
  if (asked) {
    if (*asked != wanted)
      throw UsageError(cat("--task ", task_name(*asked), " contradicts qvl ", task_name(wanted)));
    return;
  }
  const std::optional<ModelTask> shipped = shipped_task(model_dir);
  if (shipped == wanted) return;
  const std::string what = shipped ? cat("ships ", *shipped == ModelTask::Embed ? kEmbeddingScript : kRerankerScript,
                                         ": it is a ", *shipped == ModelTask::Embed ? "Qwen3-VL-Embedding" : "Qwen3-VL-Reranker",
                                         " checkpoint")
                                   : cat("ships neither ", kEmbeddingScript, " nor ", kRerankerScript,
                                         ", so nothing says it is a ",
                                         wanted == ModelTask::Embed ? "Qwen3-VL-Embedding" : "Qwen3-VL-Reranker",
                                         " checkpoint");
  fail("model folder ", model_dir, " ", what, "; pass --task ", task_name(wanted), " to use it with qvl ",
       task_name(wanted), " anyway");
}

}  // namespace qvl
