// `qvl serve`: the HTTP front of one engine. The port is bound before the
// model loads so /health can answer 503 ("loading") and then 200; every API
// route answers 503 until attach() hands over the engine.
#pragma once

#include <memory>
#include <string>

#include "engine/engine.h"
#include "io/model_task.h"
#include "server/server_options.h"

namespace qvl {

class Server {
 public:
  // `model_name` is what /v1/models and responses call the model.
  Server(const ServerOptions& options, std::string model_name);
  ~Server();

  // Binds host:port (port 0: any free port) and starts serving on background
  // threads. Returns the bound port. Throws qvl::Error when the port is taken.
  int start();
  // The process's memory budget (--memory-budget), which request media is
  // decoded against: the engine to attach reserves its KV caches from it
  // (EngineParams::memory).
  MemoryAdmission& memory();
  // The model is loaded: requests are accepted from now on, for `task`
  // (chat: the generation routes; embed: /v1/embeddings; rerank: /v1/rerank;
  // the others answer 400 saying what is served). page_window: pages of one
  // per-page job run at once (JobRunner::set_window); 0 keeps the default.
  void attach(std::unique_ptr<Engine> engine, ModelTask task = ModelTask::Chat, int page_window = 0);
  // A reranker beside an embedding model (--rerank-model), for POST
  // /v1/search's "rerank"; before attach().
  void attach_reranker(std::unique_ptr<Engine> reranker);
  // Stops accepting new work, gives running work the grace period, cancels
  // the rest, waits for open responses to end, closes the port. False when
  // cancelled work did not stop in time (the caller should then just exit).
  bool shutdown();
  // Blocks until the HTTP listener has stopped.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace qvl
