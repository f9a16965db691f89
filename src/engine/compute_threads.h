// The compute threads an engine runs, for front ends that size other things
// by them before the engine exists (qvl serve's parallel sequences).
#pragma once

namespace qvl {

// For EngineParams::threads == `threads`: that many, or (0) the physical cores.
int compute_threads(int threads);

}  // namespace qvl
