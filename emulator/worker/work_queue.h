#ifndef SOFTWARE_TPU_EMULATOR_WORK_QUEUE_H_
#define SOFTWARE_TPU_EMULATOR_WORK_QUEUE_H_

// A FIFO of closures run by a fixed set of threads, or by one fiber. With one
// thread or a fiber it is a serial queue: a core runs its programs this way,
// one at a time, in the order they became ready. The worker's cores run on
// fibers (fiber/fiber.h), so that a core waiting for another in a collective
// parks instead of holding an OS thread: eight cores share as many OS threads
// as there are CPUs.
//
// Thread safety: safe for concurrent use.

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "emulator/fiber/fiber.h"
#include "emulator/fiber/wake_word.h"

namespace tpu::emulator {

class WorkQueue {
 public:
  // REQUIRES: num_threads >= 1.
  WorkQueue(std::string name, int num_threads);
  // A serial queue whose closures run on a fiber of `fibers` (which must
  // outlive the queue). Closures that wait for another queue's closures must
  // wait through the fiber library (fiber::WakeWord, fiber::CondVar,
  // fiber::SleepFor), never by blocking the OS thread.
  WorkQueue(std::string name, fiber::Scheduler* fibers);
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
  void FiberLoop();

  const std::string name_;
  // One thread: closures never overlap, inline ones included.
  const bool serial_;

  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::vector<std::thread> threads_;
  // Fiber mode: the fiber, and the word it parks on while the queue is empty
  // or a closure runs inline elsewhere (changed by every Schedule and at the
  // end of every inline run).
  std::unique_ptr<fiber::Fiber> fiber_;
  fiber::WakeWord changed_;
};

}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_WORK_QUEUE_H_
