// Runs a test's body in a network namespace of its own (its loopback up), in
// a child process: capture there sees only the test's own traffic.
#pragma once

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace gpp::test {

// Runs `body` in a child process in a new network namespace; the test skips
// where that is not permitted (not root, a chroot or container), fails where
// the body did.
template <typename Body> void in_own_namespace(Body body) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: a network namespace of its own";
  fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNET) != 0) _exit(77);
    if (system("ip link set lo up") != 0) _exit(77);
    body();
    _exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespace of our own here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the capture in the namespace failed (its output is above)";
}

} // namespace gpp::test
