#ifndef SOFTWARE_TPU_EMULATOR_FIBER_FIBER_H_
#define SOFTWARE_TPU_EMULATOR_FIBER_FIBER_H_

// User-level fibers on a few OS threads. The worker runs each core's
// programs on a fiber of its own; a core that waits for another core (in a
// collective, for a send, at the launch barrier) parks its fiber and frees
// the OS thread for the cores it waits for. Eight cores on two CPUs then meet
// with a few nanosecond stack switches (context_switch.S) instead of eight
// context switches of the kernel.
//
// A Scheduler owns K OS threads serving one run queue of ready fibers; idle
// threads sleep on a condition variable. Fibers switch only where they park
// (WakeWord::Wait, SleepFor, RunBlocking, Yield): code between those points
// runs as on any thread, and may block its OS thread briefly (a mutex, Eigen's
// parallelFor) but must never block it waiting for another fiber.
//
// Parking: a fiber arms a token, makes itself findable (a WakeWord's waiter
// list, a timer), and switches to its thread's scheduler loop. Whoever claims
// the token (a CAS, so exactly one waker per park) makes it ready. A wake that
// comes before the fiber has finished switching out is kept as WAKE_PENDING
// and the scheduler loop requeues the fiber itself, so no wake is lost and no
// fiber runs on two threads at once.
//
// A fiber may resume on another OS thread than the one it parked on: code
// that runs on fibers must not keep a thread_local's address across a park.
//
// Thread safety: Scheduler is safe for concurrent use; a Fiber handle is used
// by its owner.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tpu::emulator::fiber {

class Scheduler;
struct ThreadContext;

// The stack every fiber gets: as large as an OS thread's default, so code
// that runs on a core (the interpreter's recursion over call graphs up to
// HloModule::kMaxCallDepth levels) has the room it had on a thread. Reserved
// with MAP_NORESERVE: only pages a fiber touches cost memory.
inline constexpr size_t kDefaultStackBytes = size_t{8} << 20;

// How long a fiber runs before MaybeYield lets a ready one have its thread:
// a few milliseconds, like a kernel's time slice, so that a yield (a few
// hundred nanoseconds) costs well under a thousandth of the slice.
inline constexpr int64_t kTimeSliceNanos = 2'000'000;

class Fiber {
 public:
  // Joins.
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Blocks the calling OS thread until the body returned. Must not be called
  // on a fiber of the same scheduler (it would hold a thread the body may
  // need).
  void Join();

  // --- For the library's wait primitives (WakeWord, SleepFor). ---

  // The fiber running on this thread, or null on a plain thread.
  static Fiber* Current();

  // Arms a park of the current fiber and returns its token. After this, a
  // Wake with the token makes the fiber ready, at most once.
  uint64_t PrepareToPark();
  // Switches out until a Wake with `token`, the armed one (or, for a finite
  // `deadline`, until then). REQUIRES: the current fiber, PrepareToPark
  // called and no lock held.
  void Park(uint64_t token, absl::Time deadline);
  // Makes `fiber` ready if `token` is its armed park; false if that park was
  // already woken.
  static bool Wake(Fiber* fiber, uint64_t token);
  // Claims the armed park `token` of `fiber` without making it ready yet;
  // the caller passes the claimed fibers to ReadyAll. False if that park was
  // already woken.
  static bool Claim(Fiber* fiber, uint64_t token);
  // Makes claimed fibers ready (all of one scheduler), under one lock.
  static void ReadyAll(const std::vector<Fiber*>& fibers);
  // After Park returned: whether its deadline ended it (not a Wake).
  bool timed_out() const { return timed_out_; }

  // Moves the current fiber to the back of the run queue.
  static void Yield();

  // Yields if the current fiber has run for kTimeSlice since it was last
  // switched in and another fiber is ready; otherwise returns at once (also
  // on a plain thread). Long computations call it between steps, so that
  // two long programs cannot hold both OS threads while other cores' work
  // waits: cores share the threads as OS threads share CPUs.
  static void MaybeYield();

 private:
  friend class Scheduler;
  enum State : int {
    kReady,
    kRunning,
    kParking,      // switching out to park
    kParked,       // switched out, waiting for its token's claim
    kWakePending,  // claimed while still switching out
    kYielding,
    kFinished,
  };
  Fiber(Scheduler* scheduler, std::function<void()> body);
  static void Main(void* arg);
  // Switches from this (running) fiber to its thread's scheduler loop.
  void SwitchOut();

  Scheduler* const scheduler_;
  std::function<void()> body_;
  void* stack_ = nullptr;  // includes the guard page at its low end
  void* sp_ = nullptr;
  // The thread this fiber last ran on (set before every switch in).
  ThreadContext* thread_ = nullptr;
  [[maybe_unused]] void* tsan_fiber_ = nullptr;  // TSan builds only
  std::atomic<int> state_{kReady};
  std::atomic<uint64_t> token_{0};
  // The scheduler thread whose run queue it goes to when ready.
  int home_ = 0;  // guarded by scheduler_->mu_
  // Its timer in the scheduler's timer map, while a timed park is armed.
  bool has_timer_ = false;  // guarded by scheduler_->mu_
  // Set by the timer that claimed the last park; read by the fiber after it
  // resumed (the run queue's lock orders the two).
  bool timed_out_ = false;
  // When the scheduler last switched it in (absl::GetCurrentTimeNanos).
  int64_t slice_start_nanos_ = 0;
  std::multimap<absl::Time, std::pair<Fiber*, uint64_t>>::iterator timer_;

  absl::Mutex join_mu_;
  bool finished_ ABSL_GUARDED_BY(join_mu_) = false;
  bool joined_ = false;
};

class Scheduler {
 public:
  // REQUIRES: threads >= 1.
  Scheduler(std::string name, int threads,
            size_t stack_bytes = kDefaultStackBytes);
  // REQUIRES: every fiber started here was joined.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Starts `body` on a new fiber. The stack comes from a pool: allocated
  // (with a guard page) when none is free, reused after a fiber is joined.
  std::unique_ptr<Fiber> Start(std::function<void()> body);

  int threads() const { return static_cast<int>(threads_.size()); }
  // Stacks allocated so far (tests check reuse).
  int stacks_allocated() const;

 private:
  friend class Fiber;
  void Loop(int index);
  // The next fiber to run, firing due timers; null once stopping.
  Fiber* Next(int index);
  // Unlocks mu_, waits a little for a fiber to become ready, and relocks.
  void Spin() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the loop does once `fiber` switched out to it.
  void AfterSwitch(Fiber* fiber);
  // Makes a claimed fiber runnable (see Fiber's states).
  void Ready(Fiber* fiber);
  // With `signal`, wakes an idle thread (under mu_); without, the caller
  // does after unlocking.
  void ReadyLocked(Fiber* fiber, bool signal = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PushLocked(Fiber* fiber, bool signal = true)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void* AllocateStack();
  void ReleaseStack(void* stack);

  const std::string name_;
  const size_t stack_bytes_;
  const size_t guard_bytes_;

  mutable absl::Mutex mu_;
  absl::CondVar work_;
  // Ready fibers, one queue per thread: a fiber goes back to the queue of
  // the thread it last ran on, so that it keeps its cache and, above all,
  // frees memory to the malloc arena it allocated from (a fiber that moved
  // threads frees into the other thread's arena, under its lock). A thread
  // with an empty queue takes from another's.
  std::vector<std::deque<Fiber*>> ready_ ABSL_GUARDED_BY(mu_);
  // Fibers in all of ready_, read without mu_ by threads spinning before
  // they sleep.
  std::atomic<int> ready_count_{0};
  // Where Start puts the next new fiber (round robin).
  int next_home_ ABSL_GUARDED_BY(mu_) = 0;
  std::multimap<absl::Time, std::pair<Fiber*, uint64_t>> timers_
      ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<void*> free_stacks_ ABSL_GUARDED_BY(mu_);
  int stacks_allocated_ ABSL_GUARDED_BY(mu_) = 0;

  std::vector<std::thread> threads_;
};

}  // namespace tpu::emulator::fiber

#endif  // SOFTWARE_TPU_EMULATOR_FIBER_FIBER_H_
