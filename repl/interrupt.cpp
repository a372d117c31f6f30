#include "repl/interrupt.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "repl/session.h"

namespace prism::repl {

namespace {
// The signal handler may only write to a pipe; the forwarding thread does the rest.
volatile sig_atomic_t wake_fd = -1;
volatile sig_atomic_t interrupt_count = 0;

void on_sigint(int) {
  interrupt_count = interrupt_count + 1;
  char c = 'c';
  if (wake_fd >= 0) {
    ssize_t n = ::write(wake_fd, &c, 1);
    (void)n;  // nothing to do about a full pipe: a cancel is already pending
  }
}
}  // namespace

int interrupts_seen() { return interrupt_count; }

InterruptForwarder::InterruptForwarder(Session& session) : session_(session) {
  if (::pipe(pipe_) != 0) return;
  ::fcntl(pipe_[1], F_SETFL, O_NONBLOCK);
  wake_fd = pipe_[1];
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &sa, nullptr);
  thread_ = std::thread([this] {
    char c;
    while (::read(pipe_[0], &c, 1) == 1 && c == 'c') {
      if (session_.active_request() != 0) {
        std::fputs("\ncancelling…\n", stderr);
        try {
          session_.cancel_active_request();
        } catch (const std::exception&) {
          // The connection is gone; the request in flight reports that itself.
        }
      }
    }
  });
}

InterruptForwarder::~InterruptForwarder() {
  if (pipe_[1] < 0) return;
  ::signal(SIGINT, SIG_DFL);
  wake_fd = -1;
  char stop = 'q';
  ssize_t n = ::write(pipe_[1], &stop, 1);
  (void)n;
  if (thread_.joinable()) thread_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

}  // namespace prism::repl
