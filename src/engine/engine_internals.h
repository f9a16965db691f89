// The model and thread pool under an Engine, for benchmarks and tests that
// drive the layers directly (qvl bench's kernel and decode figures). Not part
// of the engine's API: front ends see engine.h only.
#pragma once

#include "engine/engine.h"

namespace qvl {

class Model;
class ThreadPool;
struct DecodeProfile;

struct EngineInternals {
  static Model& model(Engine& engine);
  static ThreadPool& pool(Engine& engine);
  // Decode steps add their time split to *profile from now on (qvl bench);
  // null turns it off.
  static void set_decode_profile(Engine& engine, DecodeProfile* profile);
};

}  // namespace qvl
