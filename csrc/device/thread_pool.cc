// The host thread pool of the device model (see thread_pool.h).
#include "device/thread_pool.h"

#include <chrono>

#include "common/error.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define NACC_PAUSE() _mm_pause()
#else
#define NACC_PAUSE() std::this_thread::yield()
#endif

namespace nacc {
namespace {

using Clock = std::chrono::steady_clock;

// Spins (pausing) until done() holds or about `micros` have passed; true if
// done(). Every 64 pauses (a few microseconds) it reads the clock and, with
// `yield`, offers the CPU to another runnable thread (on an idle CPU that
// returns at once; on an oversubscribed host a spinning worker would
// otherwise hold a CPU that the caller's other threads wait for).
template <typename Done>
bool spin_until(Done done, int micros, bool yield) {
  const Clock::time_point start = Clock::now();
  for (int spins = 1;; ++spins) {
    if (done()) return true;
    NACC_PAUSE();
    if (spins % 64 == 0) {
      if (Clock::now() - start > std::chrono::microseconds(micros)) return done();
      if (yield) std::this_thread::yield();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  check_arg(threads >= 1 && threads <= 256, "host threads ", threads, " out of range [1, 256]");
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lk(mu_);
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(Job& job) {
  for (;;) {
    const int i = job.next.fetch_add(1, std::memory_order_relaxed);
    if (i >= job.n) return;
    job.task(job.ctx, i);
  }
}

void ThreadPool::worker() {
  uint64_t seen = generation_.load(std::memory_order_acquire);
  for (;;) {
    auto published = [&] {
      return stop_.load(std::memory_order_relaxed) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(published, kSpinMicros, true)) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);  // seq_cst: run() reads it after publishing
      wake_cv_.wait(lk, [&] { return stop_.load() || generation_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    // Announce first, then look: run() clears current_ before it waits for
    // active_ to drop to zero, so a job seen here outlives the drain.
    active_.fetch_add(1);
    if (Job* job = current_.load()) drain(*job);
    active_.fetch_sub(1, std::memory_order_release);
  }
}

void ThreadPool::run(int n, Task task, void* ctx) {
  if (n <= 0) return;
  bool idle = false;
  if (workers_.empty() || n == 1 || !busy_.compare_exchange_strong(idle, true)) {
    for (int i = 0; i < n; ++i) task(ctx, i);
    return;
  }
  Job job;
  job.task = task;
  job.ctx = ctx;
  job.n = n;
  current_.store(&job);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) {
    {
      std::lock_guard<std::mutex> lk(mu_);
    }
    wake_cv_.notify_all();
  }
  drain(job);
  current_.store(nullptr);
  // Every index is claimed; wait for the workers inside the job. A worker the
  // host descheduled (a shared machine) gets this thread's CPU after a short spin.
  auto quiet = [&] { return active_.load() == 0; };  // seq_cst, after the store above
  if (!spin_until(quiet, kFinishSpinMicros, false)) {
    while (!quiet()) std::this_thread::yield();
  }
  busy_.store(false, std::memory_order_release);
}

}  // namespace nacc
