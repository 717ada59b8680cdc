#include "emulator/fiber/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <utility>

#include "absl/time/clock.h"
#include "emulator/fiber/context_switch.h"

#if defined(__SANITIZE_THREAD__)
#define TPU_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TPU_FIBER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TPU_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TPU_FIBER_ASAN 1
#endif
#endif

#ifdef TPU_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#ifdef TPU_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace tpu::emulator::fiber {

// One OS thread's scheduler loop, as a fiber switches back to it.
struct ThreadContext {
  void* sp = nullptr;
  void* tsan_fiber = nullptr;
  // The thread's own stack, for ASan's bookkeeping of switches to it.
  const void* stack_bottom = nullptr;
  size_t stack_size = 0;
  void* fake_stack = nullptr;
};

namespace {

thread_local Fiber* current_fiber = nullptr;

// How long an idle thread looks for work before it sleeps.
constexpr absl::Duration kSpinBeforeSleep = absl::Microseconds(50);

[[noreturn]] void Die(const char* what) {
  std::cerr << "fiber: " << what << std::endl;
  std::abort();
}

}  // namespace

// ---------------------------------------------------------------- Fiber

Fiber::Fiber(Scheduler* scheduler, std::function<void()> body)
    : scheduler_(scheduler), body_(std::move(body)) {}

Fiber::~Fiber() {
  Join();
  scheduler_->ReleaseStack(stack_);
#ifdef TPU_FIBER_TSAN
  __tsan_destroy_fiber(tsan_fiber_);
#endif
}

void Fiber::Join() {
  if (joined_) return;
  if (Current() != nullptr && Current()->scheduler_ == scheduler_) {
    Die("Join on a fiber of the same scheduler");
  }
  absl::MutexLock lock(&join_mu_);
  join_mu_.Await(absl::Condition(&finished_));
  joined_ = true;
}

// Not inlined: a fiber may resume on another thread, so every read of the
// thread-local must really read it.
__attribute__((noinline)) Fiber* Fiber::Current() {
  Fiber* fiber = current_fiber;
  asm volatile("" ::: "memory");
  return fiber;
}

uint64_t Fiber::PrepareToPark() {
  // Only the fiber arms its token (odd); a waker's claim makes it even.
  const uint64_t token = token_.load(std::memory_order_relaxed) + 1;
  timed_out_ = false;
  state_.store(kParking, std::memory_order_relaxed);
  token_.store(token, std::memory_order_release);
  return token;
}

void Fiber::Park(uint64_t token, absl::Time deadline) {
  if (deadline != absl::InfiniteFuture()) {
    // The armed token, not token_ now: a waker may have claimed it already,
    // and a timer must never claim a later park.
    absl::MutexLock lock(&scheduler_->mu_);
    timer_ = scheduler_->timers_.emplace(deadline, std::make_pair(this, token));
    has_timer_ = true;
    // A thread sleeping until a later deadline must look again.
    if (scheduler_->idle_ > 0) scheduler_->work_.Signal();
  }
  SwitchOut();
  if (deadline != absl::InfiniteFuture()) {
    // Woken before the deadline: the timer goes (a fired one is gone).
    absl::MutexLock lock(&scheduler_->mu_);
    if (has_timer_) {
      scheduler_->timers_.erase(timer_);
      has_timer_ = false;
    }
  }
}

bool Fiber::Claim(Fiber* fiber, uint64_t token) {
  uint64_t expected = token;
  return fiber->token_.compare_exchange_strong(expected, token + 1,
                                               std::memory_order_acq_rel);
}

void Fiber::ReadyAll(const std::vector<Fiber*>& fibers) {
  if (fibers.empty()) return;
  Scheduler* scheduler = fibers.front()->scheduler_;
  int idle = 0;
  {
    absl::MutexLock lock(&scheduler->mu_);
    for (Fiber* fiber : fibers) {
      scheduler->ReadyLocked(fiber, /*signal=*/false);
    }
    idle = scheduler->idle_;
  }
  // Signalled after unlocking, so that a woken thread does not block at
  // once on mu_. No wake is lost: a thread counted idle under mu_ is already
  // waiting on work_, and one that goes idle later sees the queue first.
  if (idle > 1 && fibers.size() > 1) {
    scheduler->work_.SignalAll();
  } else if (idle > 0) {
    scheduler->work_.Signal();
  }
}

bool Fiber::Wake(Fiber* fiber, uint64_t token) {
  uint64_t expected = token;
  if (!fiber->token_.compare_exchange_strong(expected, token + 1,
                                             std::memory_order_acq_rel)) {
    return false;
  }
  fiber->scheduler_->Ready(fiber);
  return true;
}

void Fiber::Yield() {
  Fiber* self = Current();
  if (self == nullptr) {
    std::this_thread::yield();
    return;
  }
  self->state_.store(kYielding, std::memory_order_relaxed);
  self->SwitchOut();
}

void Fiber::MaybeYield() {
  Fiber* self = Current();
  if (self == nullptr) return;
  if (self->scheduler_->ready_count_.load(std::memory_order_relaxed) == 0) {
    return;
  }
  if (absl::GetCurrentTimeNanos() - self->slice_start_nanos_ <
      kTimeSliceNanos) {
    return;
  }
  Yield();
}

void Fiber::SwitchOut() {
  ThreadContext* thread = thread_;
#ifdef TPU_FIBER_TSAN
  __tsan_switch_to_fiber(thread->tsan_fiber, 0);
#endif
#ifdef TPU_FIBER_ASAN
  const bool finishing = state_.load(std::memory_order_relaxed) == kFinished;
  __sanitizer_start_switch_fiber(finishing ? nullptr : &thread->fake_stack,
                                 thread->stack_bottom, thread->stack_size);
#endif
  SwitchContext(&sp_, thread->sp);
  // Resumed, perhaps on another thread (thread_ was set anew).
#ifdef TPU_FIBER_ASAN
  __sanitizer_finish_switch_fiber(thread_->fake_stack, &thread_->stack_bottom,
                                  &thread_->stack_size);
#endif
}

void Fiber::Main(void* arg) {
  auto* self = static_cast<Fiber*>(arg);
#ifdef TPU_FIBER_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &self->thread_->stack_bottom,
                                  &self->thread_->stack_size);
#endif
  self->body_();
  self->body_ = nullptr;  // destroys the captures on the fiber's own stack
  self->state_.store(kFinished, std::memory_order_relaxed);
  self->SwitchOut();
  Die("a finished fiber was resumed");
}

// ---------------------------------------------------------------- Scheduler

Scheduler::Scheduler(std::string name, int threads, size_t stack_bytes)
    : name_(std::move(name)),
      stack_bytes_(stack_bytes),
      guard_bytes_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
  if (threads < 1) threads = 1;
  threads_.reserve(threads);
  {
    absl::MutexLock lock(&mu_);
    ready_.resize(threads);
  }
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

Scheduler::~Scheduler() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    work_.SignalAll();
  }
  for (std::thread& thread : threads_) thread.join();
  for (void* stack : free_stacks_) munmap(stack, stack_bytes_ + guard_bytes_);
}

int Scheduler::stacks_allocated() const {
  absl::MutexLock lock(&mu_);
  return stacks_allocated_;
}

std::unique_ptr<Fiber> Scheduler::Start(std::function<void()> body) {
  std::unique_ptr<Fiber> fiber(new Fiber(this, std::move(body)));
  fiber->stack_ = AllocateStack();
  fiber->sp_ = MakeContext(static_cast<char*>(fiber->stack_) + guard_bytes_,
                           stack_bytes_, &Fiber::Main, fiber.get());
#ifdef TPU_FIBER_TSAN
  fiber->tsan_fiber_ = __tsan_create_fiber(0);
#endif
  absl::MutexLock lock(&mu_);
  fiber->home_ = next_home_;
  next_home_ = (next_home_ + 1) % static_cast<int>(ready_.size());
  PushLocked(fiber.get());
  return fiber;
}

void* Scheduler::AllocateStack() {
  {
    absl::MutexLock lock(&mu_);
    if (!free_stacks_.empty()) {
      void* stack = free_stacks_.back();
      free_stacks_.pop_back();
      return stack;
    }
    ++stacks_allocated_;
  }
  void* stack =
      mmap(nullptr, stack_bytes_ + guard_bytes_, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) Die("cannot map a fiber stack");
  // The lowest page faults on overflow instead of corrupting memory.
  if (mprotect(stack, guard_bytes_, PROT_NONE) != 0) {
    Die("cannot protect a fiber stack's guard page");
  }
  return stack;
}

void Scheduler::ReleaseStack(void* stack) {
  if (stack == nullptr) return;
  absl::MutexLock lock(&mu_);
  free_stacks_.push_back(stack);
}

void Scheduler::Loop(int index) {
  ThreadContext context;
#ifdef TPU_FIBER_TSAN
  context.tsan_fiber = __tsan_get_current_fiber();
#endif
  while (Fiber* fiber = Next(index)) {
    fiber->thread_ = &context;
    fiber->slice_start_nanos_ = absl::GetCurrentTimeNanos();
    fiber->state_.store(Fiber::kRunning, std::memory_order_relaxed);
    current_fiber = fiber;
#ifdef TPU_FIBER_TSAN
    __tsan_switch_to_fiber(fiber->tsan_fiber_, 0);
#endif
#ifdef TPU_FIBER_ASAN
    __sanitizer_start_switch_fiber(
        &context.fake_stack, static_cast<char*>(fiber->stack_) + guard_bytes_,
        stack_bytes_);
#endif
    SwitchContext(&context.sp, fiber->sp_);
#ifdef TPU_FIBER_ASAN
    __sanitizer_finish_switch_fiber(context.fake_stack, nullptr, nullptr);
#endif
    current_fiber = nullptr;
    AfterSwitch(fiber);
  }
}

Fiber* Scheduler::Next(int index) {
  absl::MutexLock lock(&mu_);
  bool spun = false;
  while (true) {
    if (!timers_.empty()) {
      const absl::Time now = absl::Now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        auto [fiber, token] = timers_.begin()->second;
        timers_.erase(timers_.begin());
        fiber->has_timer_ = false;
        uint64_t expected = token;
        if (fiber->token_.compare_exchange_strong(expected, token + 1,
                                                  std::memory_order_acq_rel)) {
          fiber->timed_out_ = true;
          ReadyLocked(fiber);
        }
      }
    }
    if (ready_count_.load(std::memory_order_relaxed) > 0) {
      // Its own queue first, else the longest other one's oldest fiber.
      std::deque<Fiber*>* queue = &ready_[index];
      if (queue->empty()) {
        for (std::deque<Fiber*>& other : ready_) {
          if (other.size() > queue->size()) queue = &other;
        }
      }
      Fiber* fiber = queue->front();
      queue->pop_front();
      ready_count_.fetch_sub(1, std::memory_order_relaxed);
      fiber->home_ = index;
      return fiber;
    }
    if (stopping_) return nullptr;
    if (!spun) {
      // Everything above is looked at again after the spin, which runs
      // without mu_: a fiber, a timer or the stop may have come meanwhile.
      Spin();
      spun = true;
      continue;
    }
    ++idle_;
    if (timers_.empty()) {
      work_.Wait(&mu_);
    } else {
      work_.WaitWithDeadline(&mu_, timers_.begin()->first);
    }
    --idle_;
    spun = false;
  }
}

void Scheduler::AfterSwitch(Fiber* fiber) {
  switch (fiber->state_.load(std::memory_order_acquire)) {
    case Fiber::kParking: {
      int expected = Fiber::kParking;
      if (fiber->state_.compare_exchange_strong(expected, Fiber::kParked,
                                                std::memory_order_acq_rel)) {
        return;
      }
      // Woken while switching out (kWakePending): run it again.
      absl::MutexLock lock(&mu_);
      PushLocked(fiber);
      return;
    }
    case Fiber::kWakePending:
    case Fiber::kYielding: {
      absl::MutexLock lock(&mu_);
      PushLocked(fiber);
      return;
    }
    case Fiber::kFinished: {
      absl::MutexLock lock(&fiber->join_mu_);
      fiber->finished_ = true;
      return;
    }
    default:
      Die("a fiber switched out in an unexpected state");
  }
}

void Scheduler::Ready(Fiber* fiber) {
  int state = fiber->state_.load(std::memory_order_acquire);
  while (true) {
    if (state == Fiber::kParking) {
      if (fiber->state_.compare_exchange_weak(state, Fiber::kWakePending,
                                              std::memory_order_acq_rel)) {
        return;  // the scheduler loop requeues it once it switched out
      }
      continue;
    }
    if (state == Fiber::kParked) {
      int idle = 0;
      {
        absl::MutexLock lock(&mu_);
        PushLocked(fiber, /*signal=*/false);
        idle = idle_;
      }
      if (idle > 0) work_.Signal();  // after unlocking, as in ReadyAll
      return;
    }
    Die("a fiber was woken that was not parked");
  }
}

void Scheduler::ReadyLocked(Fiber* fiber, bool signal) {
  int state = fiber->state_.load(std::memory_order_acquire);
  while (true) {
    if (state == Fiber::kParking) {
      if (fiber->state_.compare_exchange_weak(state, Fiber::kWakePending,
                                              std::memory_order_acq_rel)) {
        return;
      }
      continue;
    }
    if (state == Fiber::kParked) {
      PushLocked(fiber, signal);
      return;
    }
    Die("a fiber was woken that was not parked");
  }
}

void Scheduler::PushLocked(Fiber* fiber, bool signal) {
  fiber->state_.store(Fiber::kReady, std::memory_order_relaxed);
  ready_[fiber->home_].push_back(fiber);
  ready_count_.fetch_add(1, std::memory_order_relaxed);
  if (signal && idle_ > 0) work_.Signal();
}

void Scheduler::Spin() {
  // Fibers parked at a meeting are usually woken a few microseconds later,
  // by the last to arrive on another thread: looking at the run queue for a
  // while costs less than a sleep and a wake of this thread (two context
  // switches and a futex call).
  mu_.Unlock();
  const absl::Time until = absl::Now() + kSpinBeforeSleep;
  bool found = false;
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (ready_count_.load(std::memory_order_relaxed) > 0) {
        found = true;
        break;
      }
      __builtin_ia32_pause();
    }
    if (found || absl::Now() >= until) break;
  }
  mu_.Lock();
}

}  // namespace tpu::emulator::fiber
