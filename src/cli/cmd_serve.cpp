// qvl serve: the web page and the OpenAI-compatible API over one engine.
// The port is bound first (so /health says 503 "loading" while the model
// downloads or loads), then the engine is attached. SIGINT/SIGTERM drain the
// server: no new work, running work gets --shutdown-grace, exit 0.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/options.h"
#include "engine/compute_threads.h"
#include "engine/engine.h"
#include "engine/parallelism.h"
#include "engine/retrieval.h"
#include "media/admission.h"
#include "server/server.h"
#include "util/args.h"
#include "util/error.h"

namespace qvl::cli {
namespace {

// What /v1/models and responses call the model: a repo id as given, or a
// local folder's name (never the server's path).
std::string served_name(std::string model) {
  while (model.size() > 1 && model.back() == '/') model.pop_back();
  std::error_code ec;
  if (std::filesystem::is_directory(model, ec)) return std::filesystem::path(model).filename().string();
  return model;
}

// --rerank-model: a Qwen3-VL-Reranker beside the embedding model, with its
// images capped as the embedding model's, one sequence (it only scores, one
// call at a time under the routes' engine lock) of the embedding model's
// context, its KV cache counted in --memory-budget.
// --rerank-model's folder (downloaded when a repo id), checked to be a reranker.
EngineParams reranker_params(const ModelChoice& model, const EngineParams& requested, const std::string& dir) {
  ModelChoice choice = model;  // the same hub source options
  choice.model = dir;
  EngineParams params = engine_params(choice, requested);
  if (shipped_task(params.model_dir) != ModelTask::Rerank)
    throw UsageError(cat("serve: --rerank-model ", choice.model, " is not a Qwen3-VL-Reranker folder (it ships no ",
                         "scripts/qwen3_vl_reranker.py)"));
  return params;
}

std::unique_ptr<Engine> load_reranker(EngineParams params, const EngineParams& embedding, int64_t slot_ctx,
                                      const std::string& dir, Server& server) {
  params.pixel_cap = embedding.pixel_cap;
  params.default_max_tokens = embedding.default_max_tokens;
  params.slots = 1;
  params.ctx_size = slot_ctx;
  params.memory = &server.memory();
  std::unique_ptr<Engine> reranker = Engine::create(params);
  std::cerr << "qvl serve: reranker " << served_name(dir) << " loaded ("
            << weight_format_name(reranker->info().weights) << ", " << static_cast<int>(reranker->info().load_ms)
            << " ms)\n";
  return reranker;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args args("serve", "--model M [--host 127.0.0.1] [--port 8080] [options]",
            "Serves the web page at / and the OpenAI-compatible API (/v1/chat/completions, /v1/responses, /v1/jobs,\n"
            "/v1/models, /health, /metrics, /tokenize, /detokenize); with --task embed or rerank (or a folder that ships\n"
            "the Qwen3-VL-Embedding or -Reranker script) /v1/embeddings or /v1/rerank instead of the generation routes.\n"
            "Binds 127.0.0.1 unless --host says otherwise.");
  ModelChoice model;
  EngineParams requested;
  ServerOptions options;
  std::optional<ModelTask> task;
  visit_options(model, args);
  visit_task(task, args);
  visit_options(requested, args);
  visit_options(options, args);
  if (!args.parse(argc, argv)) return 0;
  if (!args.positional().empty())
    throw UsageError(cat("serve: unexpected argument '", args.positional()[0], "' (see qvl serve --help)"));
  if (!args.has("model")) throw UsageError("serve: --model is required (a model folder or a Hugging Face repo id)");
  // Without --parallel the engine's slots, chosen once the model is known
  // (below), set how many sequences run: the scheduler takes at most as many
  // as the engine has, and the HTTP workers are counted for the most it may.
  const bool parallel_given = args.has("parallel");
  if (!parallel_given) options.scheduler.parallel = kMaxSequences;

  // Signals are taken by one thread with sigwait(); every other thread,
  // created after this, inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client that hangs up is a failed write, not a dead server

  Server server(options, served_name(model.model));
  const int port = server.start();
  std::cerr << "qvl serve: listening on http://" << options.host << ":" << port << " (loading the model)\n";

  std::atomic<bool> attached{false}, load_failed{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (load_failed.load()) return;
    if (!attached.load()) {
      // Nothing is running yet; a download or load in progress is simply abandoned.
      std::cerr << "qvl serve: stopped while loading\n";
      std::_Exit(0);
    }
    std::cerr << "qvl serve: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", draining (up to "
              << options.shutdown_grace_s << " s)\n";
    if (!server.shutdown()) {
      std::cerr << "qvl serve: a cancelled request did not stop in time; exiting anyway\n";
      std::_Exit(0);
    }
  });

  std::unique_ptr<Engine> engine, reranker;
  ModelTask served = ModelTask::Chat;
  int page_window = 0;
  try {
    EngineParams params = engine_params(model, requested);
    served = served_task(task, params.model_dir);
    if (!options.rerank_model.empty() && served != ModelTask::Embed)
      throw UsageError(cat("serve: --rerank-model is for an embedding server (--task embed), whose POST /v1/search it "
                           "reranks; this one serves ", task_name(served)));
    params.pixel_cap = options.max_image_pixels;
    // The retrieval models resize within their scripts' range, which the
    // chat default of --max-image-pixels would cut; a cap given is kept.
    if (served != ModelTask::Chat && !args.has("max-image-pixels"))
      params.pixel_cap = std::max(params.pixel_cap, kRetrievalMaxPixels);
    params.default_max_tokens = options.default_max_tokens;
    // One KV cache per concurrent sequence; unset --parallel and --ctx-size
    // are chosen from memory and cores (engine/parallelism.h).
    MemoryFacts facts = memory_facts(params, options.memory.memory_budget_bytes, kAutoMediaBudget);
    facts.page_bytes = static_cast<uint64_t>(options.media.pdf.max_page_pixels) * 3;  // RGB
    std::optional<EngineParams> rerank;
    if (!options.rerank_model.empty()) {
      // The reranker's weights and its one sequence (load_reranker) take
      // their share before the embedding model's sequences are counted.
      rerank = reranker_params(model, requested, options.rerank_model);
      const MemoryFacts r = memory_facts(*rerank, options.memory.memory_budget_bytes, kAutoMediaBudget);
      facts.companion_weights_bytes = r.weights_bytes;
      facts.companion_kv_bytes = r.kv_bytes_per_token * static_cast<uint64_t>(facts.sequence_tokens);
    }
    ParallelismAsked asked;
    if (parallel_given) asked.sequences = options.scheduler.parallel;
    if (args.has("ctx-size")) asked.ctx_size = params.ctx_size;
    const Parallelism chosen = choose_parallelism(facts, compute_threads(params.threads), asked);
    params.slots = chosen.sequences;
    params.ctx_size = chosen.ctx_size;
    params.memory = &server.memory();           // the KV caches counted in --memory-budget
    engine = Engine::create(params);
    const EngineInfo& info = engine->info();
    std::cerr << "qvl serve: ready on http://" << options.host << ":" << port << " (" << served_name(model.model)
              << ", " << weight_format_name(info.weights) << (info.fast_matmul ? ", fast bf16 matmul" : "") << ", "
              << info.threads << " threads, " << info.slots << " parallel sequences of " << info.slot_ctx
              << " tokens, loaded in " << static_cast<int>(info.load_ms) << " ms, task " << task_name(served)
              << ")\n";
    page_window = chosen.page_window;
    if (rerank) reranker = load_reranker(*rerank, params, info.slot_ctx, options.rerank_model, server);
  } catch (...) {
    load_failed.store(true);
    kill(getpid(), SIGTERM);  // release the signal thread before the error reaches main()
    signal_thread.join();
    throw;
  }
  if (reranker) server.attach_reranker(std::move(reranker));
  server.attach(std::move(engine), served, page_window);
  attached.store(true);
  server.wait();
  // The listener can only stop through shutdown(), which the signal thread calls.
  signal_thread.join();
  std::cerr << "qvl serve: stopped\n";
  return 0;
}

}  // namespace qvl::cli
