//===- TestProcess.cpp - Environment and child processes for tests --------===//

#include "TestProcess.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace hisa::testing;

ScopedEnvironment::ScopedEnvironment(const char *name, const char *value)
    : name(name) {
  if (const char *old = std::getenv(name))
    oldValue = old;
  if (value)
    ::setenv(name, value, /*overwrite=*/1);
  else
    ::unsetenv(name);
}

ScopedEnvironment::~ScopedEnvironment() {
  if (oldValue)
    ::setenv(name, oldValue->c_str(), /*overwrite=*/1);
  else
    ::unsetenv(name);
}

std::optional<std::string>
hisa::testing::runInChild(const std::function<std::string()> &body,
                          int seconds) {
  int fds[2];
  if (::pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string result = body();
    for (size_t done = 0; done < result.size();) {
      ssize_t count =
          ::write(fds[1], result.data() + done, result.size() - done);
      if (count <= 0)
        ::_exit(2);
      done += static_cast<size_t>(count);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string output;
  // The pipe is drained while waiting, so a child writing more than the
  // pipe holds cannot block.
  auto drain = [&] {
    char buffer[4096];
    ssize_t count;
    while ((count = ::read(fds[0], buffer, sizeof(buffer))) > 0)
      output.append(buffer, static_cast<size_t>(count));
  };
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    drain();
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      ::close(fds[0]);
      ADD_FAILURE() << "the call did not finish within " << seconds << " s";
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  drain();
  ::close(fds[0]);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    ADD_FAILURE() << "the child "
                  << (WIFSIGNALED(status)
                          ? "was killed by signal " +
                                std::to_string(WTERMSIG(status))
                          : "exited with status " +
                                std::to_string(WEXITSTATUS(status)))
                  << "; it wrote: " << output;
    return std::nullopt;
  }
  return output;
}
