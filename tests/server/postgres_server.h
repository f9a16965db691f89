// A real PostgreSQL server for the job store's tests, from Debian's
// packages: initdb in a temporary folder, the postmaster on a free loopback
// port (and a socket in that folder), stopped by its PID (SIGINT: fast
// shutdown) and the folder removed when the test ends. As root the server
// runs as the `postgres` user (PostgreSQL refuses root). Where Debian's
// postgresql package is missing, available() is false and says why, so the
// tests skip with that message. stop() and start() take it away and bring it
// back on the same port with the same data (a database outage).
#pragma once

#include <arpa/inet.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace qvl::test {

class PostgresServer {
 public:
  PostgresServer() {
    bin_ = find_bin();
    if (bin_.empty()) {
      why_ = "Debian's postgresql package is not installed (no /usr/lib/postgresql/*/bin/postgres)";
      return;
    }
    char tmpl[] = "/tmp/qvl-pg-XXXXXX";
    if (!mkdtemp(tmpl)) {
      why_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    if (geteuid() == 0) {
      const passwd* pw = getpwnam("postgres");
      if (!pw) {
        why_ = "running as root and there is no postgres user to run the server as";
        return;
      }
      uid_ = pw->pw_uid, gid_ = pw->pw_gid;
      if (chown(dir_.c_str(), uid_, gid_) != 0) {
        why_ = "cannot hand the temporary folder to the postgres user";
        return;
      }
    }
    if (run_and_wait({bin_ + "/initdb", "-D", dir_ + "/data", "-U", "qvl", "--auth=trust", "-E", "UTF8", "--no-sync",
                      "--no-instructions"}) != 0) {
      why_ = "initdb failed";
      return;
    }
    port_ = free_port();
    why_ = start();
    ready_ = why_.empty();
  }
  ~PostgresServer() {
    if (pid_ > 0) {
      kill(pid_, SIGINT);
      int status = 0;
      for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (waitpid(pid_, &status, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // Starts the postmaster (again), on the same port and data; "" once it
  // answers, else why not. After a SIGKILL the old server's backends may
  // still hold its shared memory for a moment: a start that exits is tried
  // again until the deadline.
  std::string start() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      pid_ = spawn({bin_ + "/postgres", "-D", dir_ + "/data", "-k", dir_, "-h", "127.0.0.1", "-p",
                    std::to_string(port_), "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
                    "full_page_writes=off", "-c", "max_connections=100"},
                   /*quiet=*/true);
      while (PQping(url("postgres").c_str()) != PQPING_OK) {
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        if (std::chrono::steady_clock::now() > deadline) return "the postmaster did not answer within 30 s";
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (pid_ > 0) {
        started_ = true;
        return "";
      }
      if (!started_ || std::chrono::steady_clock::now() > deadline) return "the postmaster exited at start";
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  // Stops the postmaster with `signal` (SIGINT: fast shutdown, SIGKILL: a
  // crash) and waits for it to exit; after a SIGKILL, until the server no
  // longer answers (its orphaned backends end when they see it gone).
  void stop(int signal) {
    if (pid_ <= 0) return;
    kill(pid_, signal);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    for (int i = 0; i < 200 && PQping(url("postgres").c_str()) == PQPING_OK; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  bool available() const { return ready_; }
  const std::string& why_not() const { return why_; }
  int port() const { return port_; }

  std::string url(const std::string& database) const {
    return "postgresql://qvl@127.0.0.1:" + std::to_string(port_) + "/" + database;
  }
  // A new empty database; its URL.
  std::string fresh_database() {
    const std::string name = "t" + std::to_string(++databases_);
    PGconn* c = PQconnectdb(url("postgres").c_str());
    PGresult* r = PQexec(c, ("CREATE DATABASE " + name).c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    const std::string err = PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
    if (!ok) throw std::runtime_error("CREATE DATABASE " + name + ": " + err);
    return url(name);
  }
  // Runs one statement on a database; its first value, or "" (throws on error).
  static std::string sql(const std::string& url, const std::string& statement) {
    PGconn* c = PQconnectdb(url.c_str());
    PGresult* r = PQexec(c, statement.c_str());
    const ExecStatusType s = PQresultStatus(r);
    std::string out, err = PQerrorMessage(c);
    if (s == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
    PQclear(r);
    PQfinish(c);
    if (s != PGRES_TUPLES_OK && s != PGRES_COMMAND_OK) throw std::runtime_error(statement + ": " + err);
    return out;
  }

 private:
  static std::string find_bin() {
    std::string best;
    int best_version = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
      const std::string v = e.path().filename().string();
      const int version = std::atoi(v.c_str());
      if (version > best_version && std::filesystem::exists(e.path() / "bin/postgres"))
        best_version = version, best = (e.path() / "bin").string();
    }
    return best;
  }
  static int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }
  // Forks and execs argv, as the postgres user when we are root.
  pid_t spawn(const std::vector<std::string>& argv, bool quiet) const {
    const pid_t pid = fork();
    if (pid != 0) return pid;
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(gid_) != 0 || setuid(uid_) != 0)) _exit(126);
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    if (quiet && !freopen((dir_ + "/server.log").c_str(), "a", stderr)) _exit(126);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int run_and_wait(const std::vector<std::string>& argv) const {
    const pid_t pid = spawn(argv, /*quiet=*/true);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string bin_, dir_, why_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  int port_ = 0;
  pid_t pid_ = -1;
  bool ready_ = false;
  bool started_ = false;  // once: a start that exits is then a restart to try again
  int databases_ = 0;
};

}  // namespace qvl::test
