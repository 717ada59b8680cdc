#ifndef SOFTWARE_TPU_EMULATOR_WORK_QUEUE_H_
#define SOFTWARE_TPU_EMULATOR_WORK_QUEUE_H_

// A FIFO of closures run by a fixed set of threads. With one thread it is a
// serial queue: a core runs its programs this way, one at a time, in the
// order they became ready.
//
// Thread safety: safe for concurrent use.

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu::emulator {

class WorkQueue {
 public:
  // REQUIRES: num_threads >= 1.
  WorkQueue(std::string name, int num_threads);
  // Runs every closure already scheduled, then joins the threads. Closures
  // scheduled after destruction began are run too (they come from closures
  // still running), so a closure must not wait for something only a later
  // closure of the same queue provides.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Schedule(std::function<void()> fn);

  // On a serial queue (one thread) with nothing queued or running, runs `fn`
  // on the calling thread as if the queue's thread ran it, and returns true;
  // closures scheduled meanwhile wait for it. Otherwise returns false without
  // running it. Saves the two thread hand-offs of a round trip through the
  // queue when a cheap closure finds its core idle.
  bool TryRunInline(const std::function<void()>& fn);

  // Closures scheduled and not yet finished.
  int pending() const;

 private:
  void Loop();

  const std::string name_;
  // One thread: closures never overlap, inline ones included.
  const bool serial_;

  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::vector<std::thread> threads_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORK_QUEUE_H_
