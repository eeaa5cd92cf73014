// A small persistent pool of host threads that runs the simulated cores of one
// command in parallel. The caller always takes part, so a pool of size 1 has
// no threads and any number of callers (batch handlers) may share one pool.
// Workers and callers spin for a short while (kSpinIterations pauses, tens of
// microseconds) before sleeping on a condition variable, as pthreadpool does:
// a replayed model hands the pool one short job per layer, and a condition
// variable's wake-up alone (tens of microseconds on a VM) cost more than the
// second thread saved.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
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
  void parallel_for(int n, const std::function<void(int)>& fn);

 private:
  struct Job {
    const std::function<void(int)>* fn = nullptr;
    int n = 0;
    std::atomic<int> next{0};
    std::atomic<int> done{0};
  };
  void worker();
  // Claims and runs indices of `job` until none are left.
  void drain(Job& job);

  static constexpr int kSpinIterations = 2000;

  std::atomic<uint64_t> queued_{0};  // jobs ever queued: what spinning workers watch
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable work_cv_;  // a job was queued, or stop
  std::condition_variable done_cv_;  // some job finished
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace nacc
