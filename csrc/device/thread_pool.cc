// The host thread pool of the device model (see thread_pool.h).
#include "device/thread_pool.h"

#include "common/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define NACC_PAUSE() _mm_pause()
#else
#define NACC_PAUSE() std::this_thread::yield()
#endif

namespace nacc {

ThreadPool::ThreadPool(int threads) {
  check_arg(threads >= 1 && threads <= 256, "host threads ", threads, " out of range [1, 256]");
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    stopping_.store(true);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(Job& job) {
  for (;;) {
    const int i = job.next.fetch_add(1);
    if (i >= job.n) return;
    (*job.fn)(i);
    if (job.done.fetch_add(1) + 1 == job.n) {
      std::lock_guard<std::mutex> lk(mu_);
      done_cv_.notify_all();
    }
  }
}

void ThreadPool::worker() {
  uint64_t seen = queued_.load();
  for (;;) {
    // Spin briefly for the next job before sleeping.
    for (int spin = 0; spin < kSpinIterations; ++spin) {
      if (queued_.load(std::memory_order_acquire) != seen || stopping_.load()) break;
      NACC_PAUSE();
    }
    seen = queued_.load(std::memory_order_acquire);
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      work_cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = jobs_.front();
      // A job whose indices are all claimed leaves the queue.
      if (job->next.load() >= job->n) {
        jobs_.pop_front();
        continue;
      }
    }
    drain(*job);
  }
}

void ThreadPool::parallel_for(int n, const std::function<void(int)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.push_back(job);
    queued_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();
  drain(*job);
  for (int spin = 0; spin < kSpinIterations && job->done.load() != n; ++spin) NACC_PAUSE();
  std::unique_lock<std::mutex> lk(mu_);
  done_cv_.wait(lk, [&] { return job->done.load() == n; });
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
    if (*it == job) {
      jobs_.erase(it);
      break;
    }
  }
}

}  // namespace nacc
