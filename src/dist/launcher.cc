#include "dist/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "util/error.h"

namespace shoal::dist {

namespace {

volatile sig_atomic_t g_interrupted = 0;

void OnSignal(int sig) { g_interrupted = sig; }

void WriteAll(int fd, const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away: nothing sensible to do with the output
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Say(const LaunchOptions& o, const std::string& line) { WriteAll(o.err_fd, "shoal launch: " + line + "\n"); }

std::string Var(const char* name, const std::string& value) {
  std::string out = name;
  out += '=';
  out += value;
  return out;
}

std::string ShellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string SignalName(int sig) {
  const char* name = sigabbrev_np(sig);
  return name ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

std::string Describe(int status) {
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + SignalName(WTERMSIG(status)) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw SystemError("opening a socket to find a free port", "", errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    int err = errno;
    ::close(fd);
    throw SystemError("finding a free port", "127.0.0.1", err);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

struct Placement {
  std::string host;
  bool local = true;
  int local_rank = 0;
  int local_world_size = 1;
};

std::vector<Placement> Place(const LaunchOptions& o) {
  std::vector<Placement> out;
  if (o.hosts.empty()) {
    for (int r = 0; r < o.np; ++r) out.push_back({"localhost", true, r, o.np});
    return out;
  }
  int total = 0;
  for (const HostSlots& h : o.hosts) total += h.slots;
  if (total < o.np) {
    throw InvalidError("-np " + std::to_string(o.np) + " needs " + std::to_string(o.np) + " slots; the hosts give " +
                       std::to_string(total));
  }
  for (const HostSlots& h : o.hosts) {
    int here = std::min(h.slots, o.np - static_cast<int>(out.size()));
    for (int i = 0; i < here; ++i) out.push_back({h.host, IsLocalHost(h.host), i, here});
    if (static_cast<int>(out.size()) == o.np) break;
  }
  return out;
}

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int out = -1, err = -1;   // read ends of its stdout and stderr
  int in = -1;              // write end of its stdin (remote workers stop when it closes)
  std::string out_part, err_part;  // a line not yet ended
  bool running = false;
  int status = 0;
};

void Close(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts one worker: `argv` with `env` added, in its own process group.
void Spawn(Worker& w, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int out[2], err[2], in[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(in, O_CLOEXEC) != 0) {
    throw SystemError("creating pipes for rank " + std::to_string(w.rank), "", errno);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError("starting rank " + std::to_string(w.rank), argv[0], errno);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (const std::string& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    ::execvp(args[0], args.data());
    std::string msg = "shoal launch: cannot run '" + argv[0] + "': " + std::strerror(errno) + "\n";
    WriteAll(2, msg);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that a stop right after the fork reaches its group
  ::close(out[1]);
  ::close(err[1]);
  ::close(in[0]);
  w.pid = pid;
  w.out = out[0];
  w.err = err[0];
  w.in = in[1];
  w.running = true;
}

// Emits the complete lines of `part` + `data` with the rank prefix; keeps the rest.
void EmitLines(int fd, int rank, std::string& part, const char* data, size_t n, bool eof) {
  part.append(data, n);
  std::string prefix = "[";
  prefix += std::to_string(rank);
  prefix += "] ";
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = part.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += prefix;
    out.append(part, start, nl - start + 1);
  }
  part.erase(0, start);
  if (eof && !part.empty()) {
    out += prefix;
    out += part;
    out += '\n';
    part.clear();
  }
  if (!out.empty()) WriteAll(fd, out);
}

class Job {
 public:
  Job(const LaunchOptions& o, int attempt, long job_start) : o_(o), attempt_(attempt), job_start_(job_start) {}

  ~Job() {
    for (Worker& w : workers_) {
      if (w.running) {
        ::kill(-w.pid, SIGKILL);
        ::waitpid(w.pid, nullptr, 0);
      }
      Close(w.out);
      Close(w.err);
      Close(w.in);
    }
  }

  // Returns 0 when every rank succeeded, else the failure's exit status.
  int Run() {
    std::vector<Placement> places = Place(o_);
    bool all_local = true;
    for (const Placement& p : places) all_local = all_local && p.local;
    std::string master = all_local ? "127.0.0.1" : (places[0].local ? HostName() : places[0].host);
    int port = o_.master_port > 0 ? o_.master_port : (places[0].local ? FreePort() : 29500);
    std::string cwd = std::filesystem::current_path().string();
    workers_.resize(places.size());
    for (int r = 0; r < static_cast<int>(places.size()); ++r) {
      const Placement& p = places[r];
      std::vector<std::string> env = {
          Var("SHOAL_RANK", std::to_string(r)),
          Var("SHOAL_WORLD_SIZE", std::to_string(places.size())),
          Var("SHOAL_LOCAL_RANK", std::to_string(p.local_rank)),
          Var("SHOAL_LOCAL_WORLD_SIZE", std::to_string(p.local_world_size)),
          Var("SHOAL_MASTER_ADDR", master),
          Var("SHOAL_MASTER_PORT", std::to_string(port)),
          Var("SHOAL_START_TIMEOUT", std::to_string(o_.start_timeout_s)),
          Var("SHOAL_RESTART_COUNT", std::to_string(attempt_)),
          Var("SHOAL_JOB_START", std::to_string(job_start_)),
      };
      workers_[r].rank = r;
      if (p.local) {
        Spawn(workers_[r], o_.command, env);
        continue;
      }
      // Remote: the command runs under the remote shell; it is stopped when our end of its
      // stdin closes (the remote shell does not pass on signals).
      std::string remote = "exec 3<&0; cd ";
      remote += ShellQuote(cwd);
      remote += " 2>/dev/null; env";
      for (const std::string& kv : env) (remote += ' ') += ShellQuote(kv);
      for (const std::string& a : o_.command) (remote += ' ') += ShellQuote(a);
      remote += " & p=$!; { cat <&3 >/dev/null; kill -TERM $p; sleep ";
      remote += std::to_string(static_cast<int>(o_.grace_s));
      remote += "; kill -KILL $p; } >/dev/null 2>&1 & wait $p";
      std::vector<std::string> argv;
      std::istringstream rsh(o_.rsh);
      for (std::string word; rsh >> word;) argv.push_back(word);
      if (argv.empty()) throw InvalidError("--rsh is empty");
      argv.push_back(p.host);
      argv.push_back(remote);
      Spawn(workers_[r], argv, {});
    }
    return Supervise();
  }

 private:
  using Clock = std::chrono::steady_clock;

  void Stop(int sig) {
    for (Worker& w : workers_) {
      if (!w.running) continue;
      if (sig == SIGTERM) Close(w.in);
      ::kill(-w.pid, sig);
    }
  }

  void Reap() {
    for (Worker& w : workers_) {
      if (!w.running) continue;
      int status = 0;
      pid_t got = ::waitpid(w.pid, &status, WNOHANG);
      if (got != w.pid) continue;
      w.running = false;
      w.status = status;
      Close(w.in);
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !stopping_) {
        failure_ = "rank " + std::to_string(w.rank) + " " + Describe(status);
        Say(o_, failure_ + "; stopping the other ranks");
        stopping_ = true;
        deadline_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o_.grace_s * 1000));
        Stop(SIGTERM);
      }
    }
  }

  int Supervise() {
    std::vector<char> buf(1 << 16);
    bool killed = false;
    while (true) {
      Reap();
      if (g_interrupted && !stopping_) {
        Say(o_, "interrupted by " + SignalName(g_interrupted) + "; stopping every rank");
        failure_ = "interrupted";
        stopping_ = true;
        deadline_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o_.grace_s * 1000));
        Stop(SIGTERM);
      }
      if (stopping_ && !killed && Clock::now() >= deadline_) {
        Stop(SIGKILL);
        killed = true;
      }
      std::vector<pollfd> fds;
      std::vector<std::pair<Worker*, bool>> owners;  // (worker, is stderr)
      for (Worker& w : workers_) {
        if (w.out >= 0) {
          fds.push_back({w.out, POLLIN, 0});
          owners.push_back({&w, false});
        }
        if (w.err >= 0) {
          fds.push_back({w.err, POLLIN, 0});
          owners.push_back({&w, true});
        }
      }
      bool any_running = false;
      for (const Worker& w : workers_) any_running = any_running || w.running;
      if (fds.empty() && !any_running) break;
      if (fds.empty()) {
        ::usleep(50'000);
        continue;
      }
      int n = ::poll(fds.data(), fds.size(), 100);
      if (n < 0 && errno != EINTR) throw SystemError("waiting for the workers' output", "", errno);
      for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto [w, is_err] = owners[i];
        int& fd = is_err ? w->err : w->out;
        ssize_t got = ::read(fd, buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        const bool eof = got <= 0;
        EmitLines(is_err ? o_.err_fd : o_.out_fd, w->rank, is_err ? w->err_part : w->out_part, buf.data(),
                  eof ? 0 : static_cast<size_t>(got), eof);
        if (eof) Close(fd);
      }
      // A worker that exited may leave a child holding its pipes; once it has exited and we are
      // stopping, its output no longer matters past the kill deadline.
      if (killed) {
        for (Worker& w : workers_) {
          if (!w.running) {
            Close(w.out);
            Close(w.err);
          }
        }
      }
    }
    if (failure_.empty()) return 0;
    return g_interrupted ? 128 + g_interrupted : 1;
  }

  const LaunchOptions& o_;
  int attempt_;
  long job_start_;
  std::vector<Worker> workers_;
  bool stopping_ = false;
  Clock::time_point deadline_;

 public:
  std::string failure_;
};

}  // namespace

bool IsLocalHost(const std::string& host) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == HostName();
}

std::vector<HostSlots> ParseHostList(const std::string& text) {
  std::vector<HostSlots> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) throw InvalidError("host list '" + text + "' has an empty entry");
    HostSlots h;
    size_t colon = item.rfind(':');
    h.host = item.substr(0, colon);
    if (colon != std::string::npos) {
      std::string slots = item.substr(colon + 1);
      char* end = nullptr;
      long n = std::strtol(slots.c_str(), &end, 10);
      if (slots.empty() || *end != '\0' || n < 1 || n > 4096) {
        throw InvalidError("host list entry '" + item + "': slots must be a whole number from 1 to 4096");
      }
      h.slots = static_cast<int>(n);
    }
    if (h.host.empty()) throw InvalidError("host list entry '" + item + "' has no host name");
    out.push_back(h);
  }
  if (out.empty()) throw InvalidError("the host list is empty");
  return out;
}

std::vector<HostSlots> ReadHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SystemError("opening hostfile", path, errno);
  std::vector<HostSlots> out;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string host, extra;
    if (!(words >> host)) continue;
    std::string spec = host;
    if (words >> extra) {
      if (extra.rfind("slots=", 0) != 0) {
        throw InvalidError("hostfile '" + path + "' line " + std::to_string(number) + ": expected 'host slots=N', found '" +
                           line + "'");
      }
      spec += ':';
      spec.append(extra, 6);
    }
    try {
      out.push_back(ParseHostList(spec).front());
    } catch (const Error& e) {
      throw InvalidError("hostfile '" + path + "' line " + std::to_string(number) + ": " + e.what());
    }
  }
  if (out.empty()) throw InvalidError("hostfile '" + path + "' lists no hosts");
  return out;
}

int Launch(const LaunchOptions& options) {
  if (options.np < 1) throw InvalidError("-np must be at least 1");
  if (options.command.empty()) throw InvalidError("no command to launch (give it after --)");
  if (options.max_restarts < 0) throw InvalidError("--max-restarts must not be negative");
  struct sigaction action {};
  action.sa_handler = OnSignal;
  struct sigaction old_int {}, old_term {}, old_pipe {};
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  action.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &action, &old_pipe);
  g_interrupted = 0;
  const long job_start = static_cast<long>(std::time(nullptr));
  int status = 0;
  for (int attempt = 0;; ++attempt) {
    std::string failure;
    {
      Job job(options, attempt, job_start);
      status = job.Run();
      failure = job.failure_;
    }
    if (status == 0 || g_interrupted || attempt >= options.max_restarts) {
      if (status != 0 && !g_interrupted) {
        Say(options, "job failed: " + failure +
                         (options.max_restarts > 0 ? " (after " + std::to_string(attempt) + " restarts)" : ""));
      }
      break;
    }
    Say(options, "restarting the job (restart " + std::to_string(attempt + 1) + " of " +
                     std::to_string(options.max_restarts) + ")");
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  return status;
}

}  // namespace shoal::dist
