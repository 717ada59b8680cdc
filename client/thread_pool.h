#ifndef SOFTWARE_TPU_CLIENT_THREAD_POOL_H_
#define SOFTWARE_TPU_CLIENT_THREAD_POOL_H_

// A fixed set of threads running scheduled closures in FIFO order. The client
// uses it to launch the replicas of a program in parallel.
//
// Thread safety: Schedule may be called concurrently. The destructor runs
// every closure already scheduled, then joins the threads; it must not be
// called from one of the pool's own threads.

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu::client {

class ThreadPool {
 public:
  // REQUIRES: num_threads >= 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> fn);

  int num_threads() const { return static_cast<int>(threads_.size()); }

 private:
  void WorkLoop();
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Last, so the threads are joined before the queue is destroyed.
  std::vector<std::thread> threads_;
};

}  // namespace tpu::client

#endif  // SOFTWARE_TPU_CLIENT_THREAD_POOL_H_
