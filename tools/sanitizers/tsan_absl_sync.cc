// ThreadSanitizer and Debian's abseil (--config=tsan only).
//
// Debian builds libabsl_synchronization without ThreadSanitizer, so TSan
// cannot see that absl::Mutex orders the critical sections it protects: the
// lock word changes inside uninstrumented code, and every field guarded by a
// Mutex then looks raced. This file interposes the public entry points of
// Mutex, CondVar, Notification and BlockingCounter (the executable's
// definitions come before the shared library's, for the library's own calls
// too) and tells TSan about the happens-before edges each one creates:
// release before a lock is let go, acquire once it is held again. The real
// functions still do all the work, found with dlsym(RTLD_NEXT).
//
// Linked into every binary of the tsan build by --custom_malloc (.bazelrc);
// no other build sees it.

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

// The library's definition of `mangled`; aborts if it is missing, which
// means the abseil version changed and this file must follow it.
void* Real(const char* mangled) {
  void* symbol = dlsym(RTLD_NEXT, mangled);
  if (symbol == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in abseil\n", mangled);
    std::abort();
  }
  return symbol;
}

template <typename Function>
Function RealAs(const char* mangled) {
  return reinterpret_cast<Function>(Real(mangled));
}

// Mangled names are spelled out from the inline namespace abseil was built
// with (Debian: "debian3"), so a version change fails loudly in Real().
#define TSAN_ABSL_NS "debian3"
#define MUTEX(name) "_ZN4absl7" TSAN_ABSL_NS "5Mutex" name
#define CONDVAR(name) "_ZN4absl7" TSAN_ABSL_NS "7CondVar" name

void Acquire(const void* address) {
  __tsan_acquire(const_cast<void*>(address));
}
void Release(const void* address) {
  __tsan_release(const_cast<void*>(address));
}

// A waiter's condition is evaluated while the mutex is held, by the waiter
// or by whichever thread is letting the mutex go (absl::Mutex evaluates
// waiters' conditions in Unlock). Each evaluation is therefore its own
// critical section: acquire before it reads, release after.
struct AnnotatedCondition {
  const absl::Condition* condition;
  const absl::Mutex* mu;
};

bool EvalAnnotated(AnnotatedCondition* c) {
  Acquire(c->mu);
  const bool result = c->condition->Eval();
  Release(c->mu);
  return result;
}

// absl::Mutex's deadlock detection keeps a lock graph guarded by abseil's
// own internal spinlock, which TSan cannot see either; with it on, every
// first lock of a mutex looks like a race inside GraphCycles. Lock-order
// checking is the job of the default build's tests, so it is off here.
[[maybe_unused]] const bool kDeadlockDetectionOff = [] {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return true;
}();

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// --- Mutex: held from acquire to release. ---

void Mutex::Lock() {
  static auto real = RealAs<void (*)(Mutex*)>(MUTEX("4LockEv"));
  real(this);
  Acquire(this);
}

void Mutex::ReaderLock() {
  static auto real = RealAs<void (*)(Mutex*)>(MUTEX("10ReaderLockEv"));
  real(this);
  Acquire(this);
}

bool Mutex::TryLock() {
  static auto real = RealAs<bool (*)(Mutex*)>(MUTEX("7TryLockEv"));
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static auto real = RealAs<bool (*)(Mutex*)>(MUTEX("13ReaderTryLockEv"));
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}

void Mutex::Unlock() {
  static auto real = RealAs<void (*)(Mutex*)>(MUTEX("6UnlockEv"));
  Release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  static auto real = RealAs<void (*)(Mutex*)>(MUTEX("12ReaderUnlockEv"));
  Release(this);
  real(this);
}

void Mutex::LockWhen(const Condition& cond) {
  static auto real = RealAs<void (*)(Mutex*, const Condition&)>(
      MUTEX("8LockWhenERKNS0_9ConditionE"));
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&EvalAnnotated, &annotated));
  Acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static auto real = RealAs<void (*)(Mutex*, const Condition&)>(
      MUTEX("14ReaderLockWhenERKNS0_9ConditionE"));
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&EvalAnnotated, &annotated));
  Acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      MUTEX("19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  const bool met = [&] {
    AnnotatedCondition annotated{&cond, this};
    return real(this, Condition(&EvalAnnotated, &annotated), timeout);
  }();
  Acquire(this);  // held either way
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Time)>(
      MUTEX("20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  const bool met = [&] {
    AnnotatedCondition annotated{&cond, this};
    return real(this, Condition(&EvalAnnotated, &annotated), deadline);
  }();
  Acquire(this);
  return met;
}

// --- Waits that let the mutex go and take it again. ---

void Mutex::Await(const Condition& cond) {
  static auto real = RealAs<void (*)(Mutex*, const Condition&)>(
      MUTEX("5AwaitERKNS0_9ConditionE"));
  Release(this);
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&EvalAnnotated, &annotated));
  Acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      MUTEX("16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
  Release(this);
  const bool met = [&] {
    AnnotatedCondition annotated{&cond, this};
    return real(this, Condition(&EvalAnnotated, &annotated), timeout);
  }();
  Acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Time)>(
      MUTEX("17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
  Release(this);
  const bool met = [&] {
    AnnotatedCondition annotated{&cond, this};
    return real(this, Condition(&EvalAnnotated, &annotated), deadline);
  }();
  Acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static auto real =
      RealAs<void (*)(CondVar*, Mutex*)>(CONDVAR("4WaitEPNS0_5MutexE"));
  Release(mu);
  real(this, mu);
  Acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(CondVar*, Mutex*, absl::Duration)>(
      CONDVAR("15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE"));
  Release(mu);
  const bool timed_out = real(this, mu, timeout);
  Acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  static auto real = RealAs<bool (*)(CondVar*, Mutex*, absl::Time)>(
      CONDVAR("16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"));
  Release(mu);
  const bool timed_out = real(this, mu, deadline);
  Acquire(mu);
  return timed_out;
}

// --- One-shot and counting signals. ---

void Notification::Notify() {
  static auto real = RealAs<void (*)(Notification*)>("_ZN4absl7" TSAN_ABSL_NS
                                                     "12Notification6NotifyEv");
  Release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  static auto real = RealAs<void (*)(const Notification*)>(
      "_ZNK4absl7" TSAN_ABSL_NS "12Notification19WaitForNotificationEv");
  real(this);
  Acquire(this);
}

bool Notification::WaitForNotificationWithTimeout(
    absl::Duration timeout) const {
  static auto real = RealAs<bool (*)(const Notification*, absl::Duration)>(
      "_ZNK4absl7" TSAN_ABSL_NS
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = real(this, timeout);
  if (notified) Acquire(this);
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  static auto real = RealAs<bool (*)(const Notification*, absl::Time)>(
      "_ZNK4absl7" TSAN_ABSL_NS
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = real(this, deadline);
  if (notified) Acquire(this);
  return notified;
}

bool BlockingCounter::DecrementCount() {
  static auto real = RealAs<bool (*)(BlockingCounter*)>(
      "_ZN4absl7" TSAN_ABSL_NS "15BlockingCounter14DecrementCountEv");
  Release(this);
  return real(this);
}

void BlockingCounter::Wait() {
  static auto real = RealAs<void (*)(BlockingCounter*)>(
      "_ZN4absl7" TSAN_ABSL_NS "15BlockingCounter4WaitEv");
  real(this);
  Acquire(this);
}

// --- absl::Status's shared payload. ---

// A Status with a message holds a reference-counted rep, dropped inside the
// library: every drop releases, and the last one (which deletes the rep)
// acquires what every earlier holder did with it.
void Status::UnrefNonInlined(uintptr_t rep) {
  static auto real = RealAs<void (*)(uintptr_t)>("_ZN4absl7" TSAN_ABSL_NS
                                                 "6Status15UnrefNonInlinedEm");
  void* address = reinterpret_cast<void*>(rep);
  Release(address);
  Acquire(address);
  real(rep);
}

ABSL_NAMESPACE_END
}  // namespace absl

// Debian's gRPC is not built for TSan either, so TSan cannot see how gRPC
// orders its own threads' work: memcpy and friends that libgrpc calls
// directly race with writes gRPC's executor made under locks TSan never saw
// (//driver/grpc:grpc_driver_test, a blocking Open copying the server's
// answer). Only interceptors called straight from the library are ignored;
// our code on gRPC's threads is still checked.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libgrpc.so\n";
}
