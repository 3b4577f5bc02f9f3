// Taking a std::mutex that two busy threads share (the element's streaming
// thread and its push task; the pinned pools they both allocate from and
// release to; a live capture's threads and its consumer): spin briefly on
// try_lock before sleeping.  These locks are
// held for well under a microsecond, while a thread that sleeps on one takes
// microseconds to wake: without the spin every contended batch is a latency
// outlier.  Host only.
#pragma once

#include <mutex>

namespace gpp {

// A pause hint for spin loops (keeps a hyper-thread sibling and the memory
// bus quieter without giving the core away).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Takes `lock`'s mutex again (it was let go), spinning first.
inline void spin_relock(std::unique_lock<std::mutex> &lock) {
  constexpr int kSpins = 256; // a few microseconds at most
  for (int i = 0; i < kSpins; ++i) {
    if (lock.try_lock()) return;
    cpu_relax();
  }
  lock.lock();
}

// A held lock on `m` (usable with std::condition_variable).
inline std::unique_lock<std::mutex> spin_lock(std::mutex &m) {
  std::unique_lock<std::mutex> lock(m, std::defer_lock);
  spin_relock(lock);
  return lock;
}

} // namespace gpp
