// A small persistent pool of host threads that runs the parts of one host
// kernel call (or the simulated cores of one command) in parallel. The caller
// always takes part, so a pool of size 1 has no threads.
//
// One job at a time: the job lives on the caller's stack (nothing is
// allocated per call) and is published through one pointer; a second caller
// that finds the pool busy (batch handlers sharing it, or a task that calls
// parallel_for itself) runs its indices on its own thread. Indices are
// claimed one by one from a shared counter, so a worker that comes late (the
// VM descheduled it) leaves its indices to the caller instead of holding the
// call up.
//
// Workers spin (kSpinMicros, pausing) for the next job before they sleep on a
// condition variable, as pthreadpool does: a replayed model hands the pool
// one short job per layer, and a condition variable's wake-up alone (tens of
// microseconds on a VM) costs more than the second thread saves. A woken
// worker spins again before it sleeps again, so one late job does not leave
// it asleep for the rest of the model. The caller waits for the workers'
// last indices spinning only briefly (kFinishSpinMicros), then yields its CPU:
// on a host with more runnable threads than CPUs the worker it waits for may
// need that CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace nacc {

class ThreadPool {
 public:
  // `threads` host threads in all, the caller included: threads - 1 workers.
  // Range [1, 256].
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }

  // Runs fn(i) for every i in [0, n) and returns when all have finished. The
  // calling thread runs indices too. fn must not throw (callers capture
  // exceptions per index). Safe to call from several threads at once.
  template <typename F>
  void parallel_for(int n, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run(n, [](void* ctx, int i) { (*static_cast<Fn*>(ctx))(i); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using Task = void (*)(void* ctx, int i);
  struct Job {
    Task task = nullptr;
    void* ctx = nullptr;
    int n = 0;
    std::atomic<int> next{0};
  };
  void run(int n, Task task, void* ctx);
  void worker();
  // Claims and runs indices of `job` until none are left.
  static void drain(Job& job);

  static constexpr int kSpinMicros = 200;       // a worker's wait for the next job
  static constexpr int kFinishSpinMicros = 10;  // the caller's wait for the last indices

  std::atomic<Job*> current_{nullptr};  // the job being run, if any
  std::atomic<uint64_t> generation_{0};  // jobs ever published: what idle workers watch
  std::atomic<int> active_{0};           // workers that may be inside current_
  std::atomic<int> sleepers_{0};         // workers waiting on wake_cv_
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};  // a caller's job is published (a flag, not a mutex:
                                  // a task may call parallel_for on its own thread)
  std::mutex mu_;    // guards the sleep of the workers
  std::condition_variable wake_cv_;
  std::vector<std::thread> workers_;
};

}  // namespace nacc
