//===- TestProcess.h - Environment and child processes for tests -*- C++
//-*-===//
//
// Helpers of the runtime's unit tests: a scoped environment variable, and a
// forked child that guards calls which used to hang or kill the process.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_TEST_UNIT_TESTPROCESS_H
#define HISA_TEST_UNIT_TESTPROCESS_H

#include <functional>
#include <optional>
#include <string>

namespace hisa::testing {

/// Sets or unsets an environment variable for the lifetime of the object.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const char *value);
  ~ScopedEnvironment();
  ScopedEnvironment(const ScopedEnvironment &) = delete;
  ScopedEnvironment &operator=(const ScopedEnvironment &) = delete;

private:
  const char *name;
  std::optional<std::string> oldValue;
};

/// Runs `body` in a forked child and returns what it returns; fails the
/// test (and returns std::nullopt) if the child crashes or does not finish
/// within `seconds` (it is then killed).
std::optional<std::string> runInChild(const std::function<std::string()> &body,
                                      int seconds = 10);

} // namespace hisa::testing

#endif // HISA_TEST_UNIT_TESTPROCESS_H
