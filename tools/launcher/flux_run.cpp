// tools/launcher/flux_run.cpp — `flux-run -n W [--mps] [--port P] [--timeout S] -- command args...`
//
// Starts W processes of `command` with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
// LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT) plus FLUX_RDZV_TOKEN (a fresh random secret),
// FLUX_RDZV_LISTEN_FD for rank 0 (the rendezvous socket, bound and listening here: no port race)
// and FLUX_DEVICE (ranks mapped to the visible GPUs round-robin: more ranks than GPUs puts several on
// one GPU). Every line a rank prints comes out prefixed "[rank r] ". When a rank fails (non-zero exit
// or a signal) the others are stopped (SIGTERM, then SIGKILL after 3 s) and flux-run exits with that
// rank's status. --mps starts a private MPS daemon (pipe and log folders of mode 0700 under /tmp) for
// the job and stops it at the end, also on failure or interruption; flux-run is the daemon's subreaper
// (PR_SET_CHILD_SUBREAPER), so the daemon and its server, which detach from their parent, are reaped
// here instead of lingering as zombies (<defunct>) under an init that does not reap. --timeout bounds
// the whole job.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <dirent.h>
#include <sys/prctl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "flux-run: %s\n"
               "usage: flux-run -n W [--mps] [--port P] [--timeout SECONDS] -- command [args...]\n",
               why);
  std::exit(2);
}

std::string random_token() {
  unsigned char bytes[16] = {};
  FILE* f = std::fopen("/dev/urandom", "rb");
  if (!f || std::fread(bytes, 1, sizeof(bytes), f) != sizeof(bytes)) {
    std::fprintf(stderr, "flux-run: cannot read /dev/urandom for the job token\n");
    std::exit(1);
  }
  std::fclose(f);
  std::string out;
  for (unsigned char b : bytes) {
    char buf[3];
    std::snprintf(buf, sizeof(buf), "%02x", b);
    out += buf;
  }
  return out;
}

// The rendezvous socket: bound (to `port`, or to a free one when 0) and listening here, then handed to
// rank 0 (FLUX_RDZV_LISTEN_FD) and closed in every other process. The port is never released between
// being chosen and being used, so no other local process can take it (and see the ranks' handshakes).
int listen_socket(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  socklen_t len = sizeof(addr);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stderr, "flux-run: cannot listen on 127.0.0.1:%d: %s\n", *port, std::strerror(errno));
    std::exit(1);
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// Visible GPUs without creating a CUDA context (an MPS daemon must start before any context).
int visible_gpus() {
  const char* cvd = std::getenv("CUDA_VISIBLE_DEVICES");
  if (cvd != nullptr) {
    std::string s(cvd);
    if (s.empty()) return 0;
    int n = 1;
    for (char c : s) n += c == ',';
    return n;
  }
  int n = 0;
  if (DIR* d = ::opendir("/proc/driver/nvidia/gpus")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
  }
  return n;
}

int run_quiet(const std::vector<std::string>& argv, const char* stdin_text) {
  int in[2];
  if (::pipe(in) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::close(in[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::_Exit(127);
  }
  ::close(in[0]);
  if (stdin_text) {
    ssize_t ignored = ::write(in[1], stdin_text, std::strlen(stdin_text));
    (void)ignored;
  }
  ::close(in[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Reaps every remaining child (the MPS daemon and server re-parented to us), waiting up to 10 s for
// them to exit after "quit"; the ranks have all been reaped before this runs.
void reap_detached() {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) continue;              // reaped one; look for more
    if (pid < 0 && errno == ECHILD) return;  // no children left
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "flux-run: MPS processes did not exit within 10 s of quit\n");
      return;
    }
    ::usleep(20000);
  }
}

struct Mps {
  std::string root;
  bool running = false;
  void start() {
    // The daemon double-forks; as subreaper we become the parent of the detached processes and reap
    // them in stop().
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
      std::fprintf(stderr, "flux-run: prctl(PR_SET_CHILD_SUBREAPER) failed: %s\n", std::strerror(errno));
    }
    char tmpl[] = "/tmp/flux-mps-XXXXXX";
    char* dir = ::mkdtemp(tmpl);  // mode 0700
    if (!dir) {
      std::fprintf(stderr, "flux-run: mkdtemp for MPS failed: %s\n", std::strerror(errno));
      std::exit(1);
    }
    root = dir;
    std::string pipe = root + "/pipe", log = root + "/log";
    ::mkdir(pipe.c_str(), 0700);
    ::mkdir(log.c_str(), 0700);
    ::setenv("CUDA_MPS_PIPE_DIRECTORY", pipe.c_str(), 1);
    ::setenv("CUDA_MPS_LOG_DIRECTORY", log.c_str(), 1);
    int rc = run_quiet({"nvidia-cuda-mps-control", "-d"}, nullptr);
    if (rc != 0) {
      std::fprintf(stderr, "flux-run: nvidia-cuda-mps-control -d failed (exit %d)\n", rc);
      stop();
      std::exit(1);
    }
    running = true;
    std::fprintf(stderr, "flux-run: private MPS daemon started (pipe %s)\n", pipe.c_str());
  }
  void stop() {
    if (running) {
      int rc = run_quiet({"nvidia-cuda-mps-control"}, "quit\n");
      if (rc != 0) std::fprintf(stderr, "flux-run: stopping the MPS daemon failed (exit %d)\n", rc);
      running = false;
      reap_detached();
    }
    if (!root.empty()) {
      std::string cmd = "rm -rf '" + root + "'";
      int ignored = std::system(cmd.c_str());
      (void)ignored;
      root.clear();
    }
  }
};

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of the child's stdout+stderr
  std::string partial;
  bool done = false;
  int status = 0;
};

void emit(int rank, const std::string& line) { std::printf("[rank %d] %s\n", rank, line.c_str()); }

}  // namespace

int main(int argc, char** argv) {
  int world = 0, port = 0;
  double timeout_s = 0;
  bool mps = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-n" && i + 1 < argc) {
      world = std::atoi(argv[++i]);
    } else if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);
    } else if (a == "--timeout" && i + 1 < argc) {
      timeout_s = std::atof(argv[++i]);
    } else if (a == "--mps") {
      mps = true;
    } else {
      usage(("unknown option '" + a + "'").c_str());
    }
  }
  if (world < 1) usage("-n W (W >= 1) is required");
  if (i >= argc) usage("no command after --");
  std::vector<char*> command(argv + i, argv + argc);
  command.push_back(nullptr);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  Mps daemon;
  if (mps) daemon.start();
  const int gpus = visible_gpus();
  const std::string token = random_token();
  const int rdzv_fd = listen_socket(&port);

  std::vector<Child> children(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) {
      std::fprintf(stderr, "flux-run: pipe: %s\n", std::strerror(errno));
      daemon.stop();
      return 1;
    }
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("FLUX_RDZV_TOKEN", token.c_str(), 1);
      if (r == 0) {
        ::setenv("FLUX_RDZV_LISTEN_FD", std::to_string(rdzv_fd).c_str(), 1);
      } else {
        ::close(rdzv_fd);
      }
      if (gpus > 0) ::setenv("FLUX_DEVICE", std::to_string(r % gpus).c_str(), 1);
      ::execvp(command[0], command.data());
      std::fprintf(stderr, "flux-run: cannot run '%s': %s\n", command[0], std::strerror(errno));
      std::_Exit(127);
    }
    ::setpgid(pid, pid);
    ::close(fds[1]);
    if (r == world - 1) ::close(rdzv_fd);  // rank 0 has it now
    children[static_cast<size_t>(r)].pid = pid;
    children[static_cast<size_t>(r)].out = fds[0];
  }

  auto start = std::chrono::steady_clock::now();
  int first_failure = -1, exit_code = 0;
  bool stopping = false;
  std::chrono::steady_clock::time_point kill_at{};
  auto stop_all = [&](const char* why) {
    if (stopping) return;
    stopping = true;
    std::fprintf(stderr, "flux-run: %s; stopping the other ranks\n", why);
    for (Child& c : children) {
      if (!c.done) ::kill(-c.pid, SIGTERM);
    }
    kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  };

  int running = world;
  std::chrono::steady_clock::time_point drain_until{};
  auto any_open = [&] {
    for (const Child& c : children) {
      if (c.out >= 0) return true;
    }
    return false;
  };
  // Until every rank has exited and its output is drained (bounded: 2 s after the last exit, in case
  // a grandchild keeps a pipe open).
  while (running > 0 || (any_open() && std::chrono::steady_clock::now() < drain_until)) {
    std::vector<pollfd> fds;
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r) {
      if (children[r].out >= 0) {
        fds.push_back({children[r].out, POLLIN, 0});
        ranks.push_back(r);
      }
    }
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 50);
    else ::usleep(20000);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children[ranks[k]];
      char buf[4096];
      ssize_t n = ::read(c.out, buf, sizeof(buf));
      if (n <= 0) {
        if (!c.partial.empty()) emit(ranks[k], c.partial);
        c.partial.clear();
        ::close(c.out);
        c.out = -1;
        continue;
      }
      c.partial.append(buf, static_cast<size_t>(n));
      size_t pos;
      while ((pos = c.partial.find('\n')) != std::string::npos) {
        emit(ranks[k], c.partial.substr(0, pos));
        c.partial.erase(0, pos + 1);
      }
    }
    std::fflush(stdout);
    for (int r = 0; r < world; ++r) {
      Child& c = children[r];
      if (c.done) continue;
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.done = true;
        if (--running == 0) drain_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != 0 && first_failure < 0 && !stopping) {
          first_failure = r;
          exit_code = code;
          char why[160];
          if (WIFEXITED(status)) {
            std::snprintf(why, sizeof(why), "rank %d exited with status %d", r, code);
          } else {
            std::snprintf(why, sizeof(why), "rank %d was killed by signal %d", r, WTERMSIG(status));
          }
          stop_all(why);
        }
      }
    }
    if (g_interrupted && !stopping) {
      exit_code = 130;
      stop_all("interrupted");
    }
    if (timeout_s > 0 && !stopping &&
        std::chrono::steady_clock::now() - start > std::chrono::duration<double>(timeout_s)) {
      exit_code = 124;
      char why[96];
      std::snprintf(why, sizeof(why), "the job ran past --timeout %.0f s", timeout_s);
      stop_all(why);
    }
    if (stopping && std::chrono::steady_clock::now() > kill_at) {
      for (Child& c : children) {
        if (!c.done) ::kill(-c.pid, SIGKILL);
      }
    }
  }
  for (Child& c : children) {
    if (c.out >= 0) ::close(c.out);
  }
  daemon.stop();
  if (first_failure >= 0) std::fprintf(stderr, "flux-run: failed: rank %d (status %d)\n", first_failure, exit_code);
  return exit_code;
}
