// Counters and histograms for GET /metrics (Prometheus text format 0.0.4).
// Label sets are bounded: routes are patterns ("/v1/jobs/{id}"), never raw paths.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace qvl {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;    // upper bounds, ascending (le)
  std::vector<uint64_t> counts_;  // per bucket, the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct Gauges {  // sampled when /metrics is read
  int queue_depth = 0, queue_capacity = 0, slots_busy = 0, slots_total = 0;
  int jobs_stored = 0;
  // The job store (job_store.h): its backend, jobs per state, bytes held,
  // leases this process took over from runners that died.
  std::string job_store;
  std::map<std::string, int64_t> jobs_by_state;
  int64_t job_store_bytes = 0;
  int64_t job_leases_taken_over = 0;
  bool job_store_up = true;  // false while its database cannot be reached (the counts above are then empty)
  bool ready = false;
  // The engine's image-embedding cache (counters kept by the engine).
  uint64_t image_cache_hits = 0, image_cache_misses = 0, image_cache_evictions = 0;
  size_t image_cache_bytes = 0, image_cache_entries = 0, image_cache_capacity = 0;
  // What the loaded model is (EngineInfo); model_loaded false until then.
  bool model_loaded = false;
  std::string weights, kv_type;  // "bf16", "f32", ...
  bool fast_matmul = false;
  int threads = 0;
  int64_t context_tokens = 0;  // KV capacity over all slots
  size_t kv_cache_bytes = 0;
  size_t weights_bytes = 0;
};

// The standard Prometheus process figures (what client libraries export as
// process_*), read from /proc/self and getrlimit; -1 where unreadable.
struct ProcessStats {
  double resident_bytes = -1, virtual_bytes = -1;
  double cpu_seconds = -1;  // user + system
  double start_time = -1;   // seconds since the Unix epoch
  double open_fds = -1, max_fds = -1;
};
ProcessStats read_process_stats();

class Metrics {
 public:
  Metrics();
  void request(const std::string& route, int status);
  // One finished generation: seconds per stage, tokens, and how it ended.
  struct Generation {
    double queue_s = 0, image_s = 0, vision_s = 0, prefill_s = 0, decode_s = 0, first_token_s = 0;
    int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
    std::string outcome;
    bool ran = false;  // false: it never left the queue
  };
  void generation(const Generation& g);
  // One call to the job store took `seconds` (op: claim, finish, ...).
  void store_call(const char* op, double seconds);
  std::string render(const Gauges& gauges) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, uint64_t> outcomes_;
  uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, completion_tokens_ = 0;
  Histogram queue_, image_, vision_, prefill_, decode_, first_token_;
  Histogram store_;
};

}  // namespace qvl
