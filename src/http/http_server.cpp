#include "http/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/connection.h"
#include "http/response_writer.h"
#include "http/unique_fd.h"
#include "util/error.h"

namespace qvl {

namespace {

using namespace std::chrono_literals;

// epoll tags: the listener, the wake-up eventfd, then connection ids.
constexpr uint64_t kListenerTag = 0;
constexpr uint64_t kWakeTag = 1;
constexpr auto kSweepPeriod = 50ms;
// An error answer gets this long to be read before the socket closes.
constexpr auto kLinger = 2s;
constexpr auto kAcceptPause = 100ms;  // out of descriptors and nothing to evict
constexpr size_t kReadChunk = 64u << 10;

SteadyClock::duration seconds(double s) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}

std::string address_text(const sockaddr_storage& ss, int& port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
    port = ntohs(a->sin6_port);
  }
  std::string s = buf;
  // An IPv4 client of a dual-stack socket is the same address as over IPv4.
  if (s.rfind("::ffff:", 0) == 0 && s.find('.') != std::string::npos) s = s.substr(7);
  return s;
}

HttpResponse plain_error(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.set_content(message + "\n", "text/plain; charset=utf-8");
  return r;
}

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions o;
  Handler handler;
  ErrorResponder on_error;
  Completion on_done;

  UniqueFd listener, epoll, wake;
  std::atomic<bool> stopping{false};

  // The event loop's own: no other thread touches these.
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns;
  std::unordered_map<std::string, size_t> per_address;
  uint64_t next_id = 2;
  size_t handling = 0;
  size_t bodies_held = 0;  // Σ body_held: bodies being read, queued or handled
  bool accept_paused = false;
  SteadyClock::time_point accept_resume;

  // Complete requests, to the workers.
  std::mutex work_mutex;
  std::condition_variable work_cv;
  std::deque<Connection*> work;
  bool workers_quit = false;
  std::vector<std::thread> workers;

  // Answered connections, back to the loop: keep-alive or close.
  std::mutex back_mutex;
  std::vector<std::pair<Connection*, bool>> back;

  Impl(HttpServerOptions opts, Handler h, ErrorResponder e, Completion d)
      : o(std::move(opts)), handler(std::move(h)), on_error(e ? std::move(e) : plain_error), on_done(std::move(d)) {}

  ~Impl() { quit_workers(); }

  void signal_wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake.get(), &one, sizeof one);
  }

  void watch(Connection& c, bool on) {
    if (c.registered == on) return;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = c.id;
    ::epoll_ctl(epoll.get(), on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, c.fd.get(), &ev);
    c.registered = on;
  }

  int listen() {
    if (o.max_body_memory < o.limits.max_body_bytes)
      fail("max_body_memory (", o.max_body_memory, " bytes) is below max_body_bytes (", o.limits.max_body_bytes,
           "): a body of the largest size allowed would be refused every time");
    // Each connection is a descriptor: use what the hard limit allows, and
    // keep the caps under it so accept() does not fail for want of one.
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 128)
      o.max_connections = std::min<size_t>(o.max_connections, static_cast<size_t>(rl.rlim_cur) - 64);

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(o.port);
    if (const int rc = getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found); rc != 0)
      fail("cannot listen on ", o.host, ":", o.port, ": ", gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
    UniqueFd fd(::socket(found->ai_family, found->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, found->ai_protocol));
    if (!fd.valid()) fail("cannot create a socket: ", std::strerror(errno));
    // SO_REUSEADDR only (restart while old connections linger in TIME_WAIT);
    // not SO_REUSEPORT, which would let a second server share the port.
    const int yes = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd.get(), found->ai_addr, found->ai_addrlen) != 0)
      fail("cannot listen on ", o.host, ":", o.port, " (", std::strerror(errno), ")");
    if (::listen(fd.get(), SOMAXCONN) != 0) fail("cannot listen on ", o.host, ":", o.port, ": ", std::strerror(errno));
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    int bound_port = 0;
    address_text(bound, bound_port);
    listener = std::move(fd);

    epoll.reset(::epoll_create1(EPOLL_CLOEXEC));
    wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!epoll.valid() || !wake.valid()) fail("cannot create the event loop: ", std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenerTag;
    epoll_ctl(epoll.get(), EPOLL_CTL_ADD, listener.get(), &ev);
    ev.data.u64 = kWakeTag;
    epoll_ctl(epoll.get(), EPOLL_CTL_ADD, wake.get(), &ev);

    for (int i = 0; i < std::max(1, o.workers); ++i) workers.emplace_back([this] { work_loop(); });
    return bound_port;
  }

  // ---- the event loop ----

  void run() {
    std::vector<epoll_event> events(256);
    auto last_sweep = SteadyClock::now();
    bool closing = false;
    for (;;) {
      const int n = ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()),
                                 static_cast<int>(std::chrono::milliseconds(kSweepPeriod).count()));
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kListenerTag) {
          accept_all();
        } else if (tag == kWakeTag) {
          uint64_t count;
          [[maybe_unused]] ssize_t r = ::read(wake.get(), &count, sizeof count);
        } else if (auto it = conns.find(tag); it != conns.end()) {
          on_readable(*it->second);
        }
      }
      take_back();
      if (stopping.load() && !closing) {
        closing = true;
        begin_close();
      }
      if (closing && handling == 0) break;
      const auto now = SteadyClock::now();
      if (now - last_sweep >= kSweepPeriod) {
        last_sweep = now;
        sweep(now);
      }
    }
    conns.clear();
    per_address.clear();
    quit_workers();
  }

  void begin_close() {
    if (listener.valid()) {
      epoll_ctl(epoll.get(), EPOLL_CTL_DEL, listener.get(), nullptr);
      listener.reset();
    }
    std::vector<Connection*> idle;
    for (auto& [id, c] : conns)
      if (c->phase != Connection::Phase::Handling) idle.push_back(c.get());
    for (Connection* c : idle) close_connection(*c);
  }

  void accept_all() {
    for (;;) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      const int raw = ::accept4(listener.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (raw < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          if (evict(nullptr)) continue;
          pause_accepting();
        }
        return;
      }
      UniqueFd fd(raw);
      int port = 0;
      std::string addr = address_text(ss, port);
      // Stream chunks are small writes; Nagle plus delayed ACKs would batch them.
      const int yes = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      if (conns.size() >= o.max_connections && !evict(nullptr)) {
        turn_away(fd, "the server has " + std::to_string(conns.size()) + " open connections (--max-connections)");
        continue;
      }
      if (per_address[addr] >= o.max_connections_per_address && !evict(&addr)) {
        turn_away(fd, "too many open connections from " + addr + " (--max-connections-per-address)");
        continue;
      }
      auto c = std::make_unique<Connection>();
      c->fd = std::move(fd);
      c->id = next_id++;
      c->addr = std::move(addr);
      c->port = port;
      c->parser = RequestParser(o.limits);
      c->waiting_since = SteadyClock::now();
      watch(*c, true);
      ++per_address[c->addr];
      conns.emplace(c->id, std::move(c));
    }
  }

  void pause_accepting() {
    epoll_ctl(epoll.get(), EPOLL_CTL_DEL, listener.get(), nullptr);
    accept_paused = true;
    accept_resume = SteadyClock::now() + kAcceptPause;
  }

  // Closes the connection of `addr` (any, if null) that has waited longest
  // with no request being handled. False when every one is busy.
  bool evict(const std::string* addr) {
    Connection* oldest = nullptr;
    for (auto& [id, c] : conns) {
      if (c->phase == Connection::Phase::Handling || (addr && c->addr != *addr)) continue;
      if (!oldest || c->waiting_since < oldest->waiting_since) oldest = c.get();
    }
    if (!oldest) return false;
    close_connection(*oldest);
    return true;
  }

  // Over a cap with nobody to evict: a 503, and the socket closes.
  void turn_away(const UniqueFd& fd, const std::string& why) { send_error(fd, 503, why); }

  void close_connection(Connection& c) {
    release_body(c);
    watch(c, false);
    if (auto it = per_address.find(c.addr); it != per_address.end() && --it->second == 0) per_address.erase(it);
    conns.erase(c.id);
  }

  void on_readable(Connection& c) {
    char buf[kReadChunk];
    const ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {  // EOF or reset before a whole request: there is nothing to answer
      close_connection(c);
      return;
    }
    if (c.phase == Connection::Phase::Lingering) return;  // dropped
    consume(c, std::string_view(buf, static_cast<size_t>(n)));
  }

  void consume(Connection& c, std::string_view data) {
    const auto now = SteadyClock::now();
    const bool was_started = c.parser.started(), had_head = c.parser.head_complete();
    const size_t used = c.parser.feed(data);
    if (!was_started && c.parser.started()) c.first_byte = now;
    if (!had_head && c.parser.head_complete()) c.head_done = now;
    if (c.parser.failed()) return refuse(c, c.parser.error().status, c.parser.error().message);
    if (!hold_body(c)) {
      const size_t held = bodies_held;
      release_body(c);
      c.parser = RequestParser(o.limits);  // its bytes are dropped now, not when the connection closes
      return refuse(c, 503,
                    "request bodies being received or handled hold " + std::to_string(held >> 20) +
                        " MiB, over the server's " + std::to_string(o.max_body_memory >> 20) +
                        " MiB (--max-body-memory); retry later");
    }
    if (c.parser.complete()) {
      c.pending.assign(data.substr(used));
      return dispatch(c);
    }
    if (c.parser.expects_continue() && !c.sent_continue) {
      // The client waits for this before sending the body (RFC 9110 §10.1.1).
      c.sent_continue = true;
      static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      ::send(c.fd.get(), kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  }

  // Counts the bytes of c's body received so far; false when all bodies
  // held at once would then pass max_body_memory.
  bool hold_body(Connection& c) {
    const size_t now = c.parser.body_received();
    bodies_held += now - c.body_held;
    c.body_held = now;
    return bodies_held <= o.max_body_memory;
  }

  void release_body(Connection& c) {
    bodies_held -= c.body_held;
    c.body_held = 0;
  }

  // Answers a request that will not reach a handler, then lingers: the
  // client may still be sending, and closing with unread input would reset
  // the connection before it reads the answer (RFC 9112 §9.6).
  void refuse(Connection& c, int status, const std::string& why) {
    send_error(c.fd, status, why);
    ::shutdown(c.fd.get(), SHUT_WR);
    c.phase = Connection::Phase::Lingering;
    c.linger_until = SteadyClock::now() + kLinger;
    c.waiting_since = SteadyClock::time_point::min();  // the first to make room at a cap
  }

  // An error answer is small and the socket's buffer empty: one
  // non-blocking send, never a wait in the loop.
  void send_error(const UniqueFd& fd, int status, const std::string& why) {
    HttpResponse res = on_error(status, why);
    if (status == 503) res.set_header("Retry-After", "1");
    const std::string out = response_head(res, 1, false) + res.body;
    ::send(fd.get(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  void dispatch(Connection& c) {
    watch(c, false);
    c.phase = Connection::Phase::Handling;
    ++handling;
    {
      std::lock_guard lock(work_mutex);
      work.push_back(&c);
    }
    work_cv.notify_one();
  }

  void take_back() {
    std::vector<std::pair<Connection*, bool>> done;
    {
      std::lock_guard lock(back_mutex);
      done.swap(back);
    }
    const auto now = SteadyClock::now();
    for (auto [c, keep] : done) {
      --handling;
      release_body(*c);  // the handler has finished with it
      if (!keep || stopping.load()) {
        close_connection(*c);
        continue;
      }
      c->phase = Connection::Phase::Reading;
      c->parser = RequestParser(o.limits);
      c->sent_continue = false;
      c->waiting_since = now;
      watch(*c, true);
      // A pipelined request already read is answered next, in order.
      const std::string buffered = std::move(c->pending);
      c->pending.clear();
      if (!buffered.empty()) consume(*c, buffered);
    }
  }

  void sweep(SteadyClock::time_point now) {
    if (accept_paused && now >= accept_resume && listener.valid()) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerTag;
      epoll_ctl(epoll.get(), EPOLL_CTL_ADD, listener.get(), &ev);
      accept_paused = false;
    }
    std::vector<Connection*> expired, late;
    for (auto& [id, cp] : conns) {
      Connection& c = *cp;
      if (c.phase == Connection::Phase::Lingering) {
        if (now >= c.linger_until) expired.push_back(&c);
      } else if (c.phase == Connection::Phase::Reading) {
        if (!c.parser.started()) {
          if (now - c.waiting_since > seconds(o.idle_timeout_s)) expired.push_back(&c);
        } else if (!c.parser.head_complete()) {
          if (now - c.first_byte > seconds(o.header_timeout_s)) late.push_back(&c);
        } else {
          // A body may take body_timeout_s plus its size at the minimum rate.
          const double allowed = o.body_timeout_s + static_cast<double>(c.parser.body_received()) /
                                                        static_cast<double>(std::max<size_t>(1, o.min_body_rate));
          if (now - c.head_done > seconds(allowed)) late.push_back(&c);
        }
      }
    }
    for (Connection* c : expired) close_connection(*c);
    for (Connection* c : late) {
      const bool head = !c->parser.head_complete();
      refuse(*c, 408,
             head ? "the request header did not arrive within " + std::to_string(static_cast<int>(o.header_timeout_s)) + " s"
                  : "the request body did not arrive in time (" + std::to_string(static_cast<int>(o.body_timeout_s)) +
                        " s plus 1 s per " + std::to_string(o.min_body_rate >> 10) + " KiB)");
    }
  }

  // ---- the workers ----

  void work_loop() {
    for (;;) {
      Connection* c;
      {
        std::unique_lock lock(work_mutex);
        work_cv.wait(lock, [&] { return workers_quit || !work.empty(); });
        if (work.empty()) return;
        c = work.front();
        work.pop_front();
      }
      const bool keep = serve(*c);
      {
        std::lock_guard lock(back_mutex);
        back.emplace_back(c, keep);
      }
      signal_wake();
    }
  }

  // Runs the handler and writes its answer; whether the connection can take another request.
  bool serve(Connection& c) {
    HttpRequest req = std::move(c.parser.request());
    req.remote_addr = c.addr;
    req.remote_port = c.port;
    c.start_handling(req.version_minor);
    req.client_gone = [&c] { return c.client_gone(); };
    HttpResponse res;
    try {
      handler(req, res);
    } catch (...) {
      res = on_error(500, "internal error");
    }
    c.start_response();
    bool keep = req.keep_alive && !stopping.load();
    const WriteTarget target{c.fd.get(), std::chrono::milliseconds(static_cast<int64_t>(o.write_timeout_s * 1000))};
    write_response(target, req, res, keep);
    // A client that half-closed reads this answer and the answers to what it
    // had already sent, then the connection ends.
    if (keep && c.pending.empty() && c.half_closed()) keep = false;
    if (on_done) on_done(req, res);
    return keep;
  }

  void quit_workers() {
    {
      std::lock_guard lock(work_mutex);
      workers_quit = true;
    }
    work_cv.notify_all();
    for (std::thread& t : workers)
      if (t.joinable()) t.join();
    workers.clear();
  }
};

HttpServer::HttpServer(HttpServerOptions options, Handler handler, ErrorResponder on_error, Completion on_done)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(on_error), std::move(on_done))) {}

HttpServer::~HttpServer() = default;

int HttpServer::listen() { return impl_->listen(); }

void HttpServer::run() { impl_->run(); }

void HttpServer::stop() {
  impl_->stopping.store(true);
  if (impl_->wake.valid()) impl_->signal_wake();
}

}  // namespace qvl
