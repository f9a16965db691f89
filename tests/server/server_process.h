// Starts the real `qvl serve` (QVL_BINARY) on a free loopback port with the
// tiny fixture model, waits until /health says ready, and stops it with
// SIGTERM (expecting exit 0) when the test is done. Unless the test names a
// job store (--jobs-db, --state-dir), each server gets its own temporary
// state folder, so servers of tests run at once never share a queue. Plus
// small HTTP helpers.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../cli/run_qvl.h"

namespace qvl::test {

inline const std::string kFixtures = QVL_FIXTURES_DIR;
inline const std::string kTinyModel = kFixtures + "/tiny-qwen3vl";

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string base64(const std::string& bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = uint8_t(bytes[i]) << 16 | uint8_t(bytes[i + 1]) << 8 | uint8_t(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out += abc[(v >> (6 * k)) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += abc[v >> 18 & 63], out += abc[v >> 12 & 63], out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16 | uint8_t(bytes[i + 1]) << 8;
    out += abc[v >> 18 & 63], out += abc[v >> 12 & 63], out += abc[v >> 6 & 63], out += '=';
  }
  return out;
}

inline std::string png_data_uri(const std::string& name = "gradient_320x240") {
  return "data:image/png;base64," + base64(read_file(kFixtures + "/golden/images/" + name + ".png"));
}

class ServerProcess {
 public:
  // `model`: another model folder than the tiny fixture (e.g. a Thinking one).
  explicit ServerProcess(std::vector<std::string> extra = {}, std::vector<std::string> env = {},
                         const std::string& model = kTinyModel) {
    std::vector<std::string> args = {QVL_BINARY, "serve", "--model", model, "--port", "0", "--threads", "1"};
    const bool own_store = std::find_if(extra.begin(), extra.end(), [](const std::string& a) {
                             return a == "--jobs-db" || a == "--state-dir";
                           }) != extra.end();
    if (!own_store) {
      char tmpl[] = "/tmp/qvl-test-state-XXXXXX";
      if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
      state_dir_ = tmpl;
      args.insert(args.end(), {"--state-dir", state_dir_});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    int err_pipe[2];
    if (pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      // Dies with the test: a test that aborts (a sanitizer report, a crash)
      // runs no destructor, and a server left behind would hold ctest's
      // output pipe open, hanging the whole run.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(err_pipe[1], 2);
      close(err_pipe[0]);
      close(err_pipe[1]);
      for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(err_pipe[1]);
    err_fd_ = err_pipe[0];
    // Drained all the time: a full pipe would block the server's log writes.
    reader_ = std::thread([this] {
      char buf[4096];
      ssize_t n;
      while ((n = read(err_fd_, buf, sizeof buf)) > 0) {
        std::lock_guard lock(log_mutex_);
        log_.append(buf, n);
      }
    });
    // The first line names the port; then /health turns 200 when the model is in.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const std::regex re("listening on http://[^:]+:([0-9]+)");
    std::smatch m;
    while (port_ == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const std::string text = log();
      if (std::regex_search(text, m, re)) port_ = std::stoi(m[1]);
      if (exited() || std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("qvl serve did not start:\n" + log());
    }
    for (;;) {
      auto r = client().Get("/health");
      if (r && r->status == 200) break;
      if (exited() || std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("qvl serve did not become ready:\n" + log());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  ~ServerProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (reader_.joinable()) reader_.join();  // EOF once the server is gone
    if (err_fd_ >= 0) close(err_fd_);
    if (!state_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(state_dir_, ec);
    }
  }

  // SIGTERM, then the exit code (-1 if it had to be killed after `wait`).
  int stop(std::chrono::seconds wait = std::chrono::seconds(30)) {
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        reaped_ = true;
        return -1;
      }
    }
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }
  httplib::Client client(int timeout_s = 60) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(timeout_s, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }

  // The value of one unlabelled metric (or a labelled series written out in full).
  double metric(const std::string& series) const {
    auto r = client().Get("/metrics");
    if (!r) return -1;
    std::istringstream in(r->body);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    return 0;  // a counter never incremented is absent
  }

 private:
  bool exited() {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      return true;
    }
    return false;
  }

  pid_t pid_ = -1;
  int err_fd_ = -1;
  std::string state_dir_;  // ours to remove; empty when the test named a store
  int port_ = 0;
  bool reaped_ = false;
  std::mutex log_mutex_;
  std::string log_;
  std::thread reader_;
};

// A test suite whose tests share one server, started before the suite's
// first test and stopped after its last, which must exit 0.
class SharedServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess(); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }
  static inline ServerProcess* server_ = nullptr;
};

inline nlohmann::json user_message(const std::string& text, const std::string& image_uri = "") {
  nlohmann::json content = nlohmann::json::array();
  if (!image_uri.empty()) content.push_back({{"type", "image_url"}, {"image_url", {{"url", image_uri}}}});
  content.push_back({{"type", "text"}, {"text", text}});
  return {{"role", "user"}, {"content", content}};
}

// The tiny model's KV caches at the default --ctx-size (8192 positions x 4
// layers x K and V x 64 f32 values), which --memory-budget holds before any
// media; and the arguments that leave `media` bytes of it for media.
inline constexpr uint64_t kTinyKvBytes = uint64_t{8192} * 4 * 2 * 64 * 4;
inline std::vector<std::string> media_budget_args(uint64_t media) {
  return {"--memory-budget", std::to_string(kTinyKvBytes + media)};
}

inline nlohmann::json chat_body(const std::string& text, const std::string& image_uri = "", int max_tokens = 16) {
  return {{"model", "anything"},
          {"messages", nlohmann::json::array({user_message(text, image_uri)})},
          {"temperature", 0},
          {"max_tokens", max_tokens}};
}

inline httplib::Result post_json(httplib::Client& c, const std::string& path, const nlohmann::json& body,
                                 const httplib::Headers& headers = {}) {
  return c.Post(path.c_str(), headers, body.dump(), "application/json");
}

// The events of an SSE body: the JSON after each "data: " (the [DONE] marker as a string).
inline std::vector<nlohmann::json> sse_events(const std::string& body) {
  std::vector<nlohmann::json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("data: ", 0) != 0) continue;
    const std::string data = line.substr(6);
    out.push_back(data == "[DONE]" ? nlohmann::json("[DONE]") : nlohmann::json::parse(data));
  }
  return out;
}

inline std::string streamed_text(const std::vector<nlohmann::json>& events) {
  std::string text;
  for (const auto& e : events)
    if (e.is_object() && e.contains("choices") && !e["choices"].empty() && e["choices"][0]["delta"].contains("content"))
      text += e["choices"][0]["delta"]["content"].get<std::string>();
  return text;
}

// Whether this build runs under AddressSanitizer (make sanitize); the server
// binary is built with the same flags as the tests.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif
// How many times slower than a release build the server may run: ASan's
// checks made a four-page batch take over the 60 s a release build is given.
inline constexpr int kTimeScale = kAddressSanitizer ? 4 : 1;

// Polls until pred() holds or `ms` (times kTimeScale) pass.
template <typename Pred>
bool eventually(Pred pred, int ms = 5000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms) * kTimeScale;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// `qvl run` greedy in a fresh process (cold caches) with the tiny model and
// `args` (prompt, image, system...): the reference answer's text.
inline std::string run_answer(std::vector<std::string> args, int max_tokens) {
  const std::vector<std::string> base = {"run", "--model", kTinyModel, "--threads", "1", "--temperature", "0",
                                         "--output-format", "json", "--max-tokens", std::to_string(max_tokens)};
  args.insert(args.begin(), base.begin(), base.end());
  const QvlResult r = run_qvl(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out).at("text").get<std::string>();
}

}  // namespace qvl::test
