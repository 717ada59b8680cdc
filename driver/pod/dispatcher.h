#ifndef SOFTWARE_TPU_DRIVER_POD_DISPATCHER_H_
#define SOFTWARE_TPU_DRIVER_POD_DISPATCHER_H_

// One thread that runs posted closures in FIFO order. The pod driver funnels
// every completion through it, so that completing an operation never recurses
// into its dependents on the completing thread (a chain of 100,000 operations
// must not become 100,000 stack frames) and so that user callbacks never run
// on a worker driver's threads.
//
// Thread safety: Post may be called from any thread, including from a closure
// running on the dispatcher.

#include <atomic>
#include <deque>
#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu::driver {

class Dispatcher {
 public:
  Dispatcher();
  // Runs everything posted so far (and whatever that posts), then joins.
  ~Dispatcher();

  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Queues `fn` to run on the dispatcher thread. After destruction began,
  // closures posted from other threads are dropped.
  void Post(std::function<void()> fn);

  // True on the dispatcher thread itself.
  bool OnDispatcherThread() const;

  // True when every closure posted so far has finished running. A caller
  // that saw the effect of a closure (say, an operation it completed) and
  // then sees Idle() knows that closure's remaining work is done too.
  bool Idle() const { return unfinished_.load() == 0; }

 private:
  void Loop();

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Closures posted and not yet finished (queued or running).
  std::atomic<int64_t> unfinished_{0};

  // Last: started after, and joined before, the state above.
  std::thread thread_;
};

}  // namespace tpu::driver

#endif  // SOFTWARE_TPU_DRIVER_POD_DISPATCHER_H_
