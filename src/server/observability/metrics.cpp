#include "server/observability/metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <sstream>

namespace qvl {
namespace {

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// Seconds, from a fast tiny-model step to a slow CPU answer.
std::vector<double> seconds_buckets() {
  return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// Boot time in seconds since the epoch (/proc/stat "btime"), -1 if absent.
double boot_time() {
  std::ifstream f("/proc/stat");
  std::string key;
  double v;
  while (f >> key) {
    if (key == "btime" && f >> v) return v;
    f.ignore(1 << 20, '\n');
  }
  return -1;
}

}  // namespace

ProcessStats read_process_stats() {
  ProcessStats p;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  // /proc/self/stat: "pid (comm) state ..."; comm may hold spaces and ')',
  // so fields are counted after the last ')'. Field 3 (state) is first there;
  // utime 14, stime 15, starttime 22 (clock ticks after boot), vsize 23
  // (bytes), rss 24 (pages) — proc(5).
  std::ifstream sf("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(sf)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren != std::string::npos && ticks > 0) {
    std::istringstream in(stat.substr(paren + 2));
    std::vector<std::string> f;  // f[0] is field 3
    for (std::string w; in >> w;) f.push_back(w);
    auto field = [&](int n) { return std::stod(f.at(n - 3)); };
    try {
      p.cpu_seconds = (field(14) + field(15)) / ticks;
      const double btime = boot_time();
      if (btime >= 0) p.start_time = btime + field(22) / ticks;
      p.virtual_bytes = field(23);
      p.resident_bytes = field(24) * page;
    } catch (const std::exception&) {  // a short or odd line: leave -1
    }
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    int n = 0;
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
    p.open_fds = n - 1;  // not the descriptor opendir itself holds
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) p.max_fds = static_cast<double>(rl.rlim_cur);
  return p;
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += v;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  header(out, name, "histogram", help);
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : queue_(seconds_buckets()),
      image_(seconds_buckets()),
      vision_(seconds_buckets()),
      prefill_(seconds_buckets()),
      decode_(seconds_buckets()),
      first_token_(seconds_buckets()),
      store_({0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}) {}

void Metrics::store_call(const char*, double seconds) {
  std::lock_guard lock(mutex_);
  store_.observe(seconds);
}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
}

void Metrics::generation(const Generation& g) {
  std::lock_guard lock(mutex_);
  ++outcomes_[g.outcome];
  queue_.observe(g.queue_s);
  if (!g.ran) return;
  image_.observe(g.image_s);
  vision_.observe(g.vision_s);
  prefill_.observe(g.prefill_s);
  decode_.observe(g.decode_s);
  first_token_.observe(g.first_token_s);
  prompt_tokens_ += g.prompt_tokens;
  cached_tokens_ += g.cached_tokens;
  completion_tokens_ += g.completion_tokens;
}

std::string Metrics::render(const Gauges& gg) const {
  std::lock_guard lock(mutex_);
  std::string o;
  header(o, "qvl_requests_total", "counter", "HTTP requests by route and status");
  for (const auto& [k, v] : requests_)
    o += "qvl_requests_total{route=\"" + k.first + "\",status=\"" + std::to_string(k.second) + "\"} " +
         std::to_string(v) + "\n";
  header(o, "qvl_generations_total", "counter", "generation tasks by outcome");
  for (const auto& [k, v] : outcomes_) o += "qvl_generations_total{outcome=\"" + k + "\"} " + std::to_string(v) + "\n";
  auto gauge = [&](const char* name, const char* help, double v) {
    header(o, name, "gauge", help);
    o += std::string(name) + " " + num(v) + "\n";
  };
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    header(o, name, "counter", help);
    o += std::string(name) + " " + std::to_string(v) + "\n";
  };
  gauge("qvl_ready", "1 when the model is loaded and requests are accepted", gg.ready ? 1 : 0);
  gauge("qvl_queue_depth", "tasks waiting for a slot", gg.queue_depth);
  gauge("qvl_queue_capacity", "most tasks that may wait (--queue-size)", gg.queue_capacity);
  gauge("qvl_slots_busy", "slots generating now", gg.slots_busy);
  gauge("qvl_slots_total", "slots (sequences generated at once)", gg.slots_total);
  gauge("qvl_jobs_stored", "async jobs held (any state)", gg.jobs_stored);
  header(o, "qvl_jobs", "gauge", "async jobs in the job store by state (all replicas sharing it)");
  for (const auto& [state, n] : gg.jobs_by_state)
    o += "qvl_jobs{state=\"" + state + "\",store=\"" + gg.job_store + "\"} " + std::to_string(n) + "\n";
  gauge("qvl_job_store_up", "1 when the job store can be reached, 0 while its database is away",
        gg.job_store_up ? 1 : 0);
  gauge("qvl_job_store_bytes", "bytes of job bodies and results in the job store (--max-job-bytes)",
        static_cast<double>(gg.job_store_bytes));
  counter("qvl_job_leases_taken_over_total",
          "running jobs this process claimed again after their runner's lease ran out (a replica died)",
          static_cast<uint64_t>(gg.job_leases_taken_over));
  counter("qvl_prompt_tokens_total", "prompt tokens of finished generations", prompt_tokens_);
  counter("qvl_prompt_tokens_cached_total", "prompt tokens reused from the KV cache (prefix cache hits)",
          cached_tokens_);
  counter("qvl_generated_tokens_total", "completion tokens generated", completion_tokens_);
  counter("qvl_image_cache_hits_total", "images whose embeddings came from the image-embedding cache",
          gg.image_cache_hits);
  counter("qvl_image_cache_misses_total", "images the vision encoder computed (not in the image-embedding cache)",
          gg.image_cache_misses);
  counter("qvl_image_cache_evictions_total", "image embeddings dropped to stay within --image-cache-mb",
          gg.image_cache_evictions);
  gauge("qvl_image_cache_bytes", "memory held by cached image embeddings", static_cast<double>(gg.image_cache_bytes));
  gauge("qvl_image_cache_entries", "images in the image-embedding cache", static_cast<double>(gg.image_cache_entries));
  gauge("qvl_image_cache_capacity_bytes", "bound of the image-embedding cache (--image-cache-mb)",
        static_cast<double>(gg.image_cache_capacity));
  if (gg.model_loaded) {
    header(o, "qvl_model_info", "gauge",
           "the loaded model's weight format, KV cache type and matmul precision (always 1)");
    o += "qvl_model_info{weights=\"" + gg.weights + "\",kv_type=\"" + gg.kv_type + "\",fast_matmul=\"" +
         (gg.fast_matmul ? "true" : "false") + "\"} 1\n";
    gauge("qvl_threads", "threads of the compute pool (--threads)", gg.threads);
    gauge("qvl_context_tokens", "KV cache capacity in tokens over all slots (--ctx-size)",
          static_cast<double>(gg.context_tokens));
    gauge("qvl_weights_bytes", "the weight matrices in their loaded format (--weights)",
          static_cast<double>(gg.weights_bytes));
    gauge("qvl_kv_cache_bytes",
          "address space reserved for every slot's KV cache (pages are taken as tokens are written)",
          static_cast<double>(gg.kv_cache_bytes));
  }
  const ProcessStats p = read_process_stats();
  auto process = [&](const char* name, const char* type, const char* help, double v) {
    if (v < 0) return;  // unreadable here (not Linux): left out, as client libraries do
    header(o, name, type, help);
    char b[64];
    std::snprintf(b, sizeof b, "%.15g", v);  // 0.77, not 0.77000000000000002
    o += std::string(name) + " " + b + "\n";
  };
  process("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", p.resident_bytes);
  process("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", p.virtual_bytes);
  process("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", p.cpu_seconds);
  process("process_open_fds", "gauge", "Number of open file descriptors.", p.open_fds);
  process("process_max_fds", "gauge", "Maximum number of open file descriptors.", p.max_fds);
  process("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
          p.start_time);
  queue_.render(o, "qvl_queue_seconds", "time from submission to a slot");
  image_.render(o, "qvl_image_seconds", "image fetch, decode and preprocess time per request");
  vision_.render(o, "qvl_vision_seconds", "vision encoder time per request");
  prefill_.render(o, "qvl_prefill_seconds", "prompt prefill time per request");
  decode_.render(o, "qvl_decode_seconds", "decode time per request");
  first_token_.render(o, "qvl_first_token_seconds", "time from the start of generation to the first token");
  store_.render(o, "qvl_job_store_seconds", "time of one job store call by the job runner (claim, heartbeat, finish)");
  return o;
}

}  // namespace qvl
