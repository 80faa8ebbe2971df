// scripts/device/segv_backtrace.c — a diagnosis aid for the GPU machine (no gdb there): LD_PRELOAD it to
// print the native stack (glibc backtrace, with the exported symbol names) when a process crashes.
//   gcc -shared -fPIC -o /tmp/segv.so scripts/device/segv_backtrace.c && LD_PRELOAD=/tmp/segv.so cmd...
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_crash(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  const char* head = "segv_backtrace: native stack:\n";
  (void)!write(2, head, strlen(head));
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  signal(SIGSEGV, on_crash);
  signal(SIGBUS, on_crash);
  signal(SIGABRT, on_crash);
}
