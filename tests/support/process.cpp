// tests/support/process.cpp — see process.h.
#include "tests/support/process.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace flux::testing {

namespace {
struct Running {
  pid_t pid = -1;
  int out = -1;
  bool done = false;
  ProcessResult result;
};

Running start(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env) {
  Running r;
  int fds[2];
  if (::pipe(fds) != 0) return r;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot exec %s: %s\n", args[0], std::strerror(errno));
    std::_Exit(127);
  }
  ::close(fds[1]);
  r.pid = pid;
  r.out = fds[0];
  return r;
}
}  // namespace

std::vector<ProcessResult> run_processes(const std::vector<std::vector<std::string>>& argvs,
                                         const std::vector<std::vector<std::pair<std::string, std::string>>>& envs,
                                         double timeout_s) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Running> procs;
  for (size_t i = 0; i < argvs.size(); ++i) procs.push_back(start(argvs[i], envs[i]));
  bool killed = false;
  while (true) {
    bool active = false;
    for (Running& p : procs) {
      if (p.out >= 0) {
        active = true;
        pollfd fd{p.out, POLLIN, 0};
        if (::poll(&fd, 1, 10) > 0) {
          char buf[4096];
          ssize_t n = ::read(p.out, buf, sizeof(buf));
          if (n > 0) {
            p.result.output.append(buf, static_cast<size_t>(n));
          } else {
            ::close(p.out);
            p.out = -1;
          }
        }
      }
      if (!p.done && p.pid > 0) {
        int status = 0;
        if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
          p.done = true;
          p.result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          p.result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        } else {
          active = true;
        }
      }
    }
    if (!active) break;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!killed && elapsed > timeout_s) {
      killed = true;
      for (Running& p : procs) {
        if (!p.done && p.pid > 0) ::kill(-p.pid, SIGKILL);
      }
    }
  }
  std::vector<ProcessResult> out;
  for (Running& p : procs) {
    if (killed && p.result.exit_code == 137) p.result.exit_code = -2;
    out.push_back(p.result);
  }
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env, double timeout_s) {
  return run_processes({argv}, {env}, timeout_s)[0];
}

int free_tcp_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

std::string sibling_binary(const std::string& name, const std::string& fallback) {
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return fallback;
}

void run_probe_job(const std::string& probe, int world, bool mps, const std::string& job_mode, const std::string& marker,
                   const std::vector<std::pair<std::string, std::string>>& job_env) {
  // "<mode>_chaos": the probe's <mode> with chaos mode on (random delays at every protocol step).
  const std::string suffix = "_chaos";
  const bool chaos = job_mode.size() > suffix.size() &&
                     job_mode.compare(job_mode.size() - suffix.size(), suffix.size(), suffix) == 0;
  const std::string mode = chaos ? job_mode.substr(0, job_mode.size() - suffix.size()) : job_mode;
  std::vector<std::pair<std::string, std::string>> env = job_env;
  if (chaos) env.push_back({"FLUX_CHAOS_SEED", "20261201"});
  if (mps && std::system("command -v nvidia-cuda-mps-control > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "MPS test skipped: nvidia-cuda-mps-control is not on PATH";
  }
  const std::string launcher = sibling_binary("flux-run", FLUX_RUN_PATH);
  std::vector<std::string> argv = {launcher, "-n", std::to_string(world), "--timeout", "400"};
  if (mps) argv.push_back("--mps");
  argv.insert(argv.end(), {"--", probe, mode});
  ProcessResult r = run_process(argv, env, 450);
  ASSERT_EQ(r.exit_code, 0) << "W=" << world << (mps ? " MPS " : " time-sliced ") << mode << "\n" << r.output;
  if (mps) {  // flux-run reaps its MPS daemon: no <defunct> MPS process is left behind
    ProcessResult z = run_process({"sh", "-c", "ps -eo stat=,comm= | grep '^Z' | grep -c nvidia-cuda-mps || true"}, {}, 30);
    EXPECT_EQ(std::atoi(z.output.c_str()), 0) << "zombie MPS processes after the job: " << z.output;
  }
  for (int rank = 0; rank < world; ++rank) {
    EXPECT_NE(r.output.find(marker + " PASSED: rank " + std::to_string(rank) + " of " + std::to_string(world)),
              std::string::npos)
        << r.output;
  }
  std::printf("%s", r.output.c_str());
}

}  // namespace flux::testing
