// The model and thread pool under an Engine, for benchmarks and tests that
// drive the layers directly (qvl bench's kernel and decode figures). Not part
// of the engine's API: front ends see engine.h only.
#pragma once

#include "engine/engine.h"

namespace qvl {

class Model;
class ThreadPool;

struct EngineInternals {
  static Model& model(Engine& engine);
  static ThreadPool& pool(Engine& engine);
};

}  // namespace qvl
