#include "python/extension/deferred_release.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tpu::python {
namespace {

struct Queue {
  absl::Mutex mu;
  std::vector<PyObject*> references ABSL_GUARDED_BY(mu);
};

// Leaked: it may be used by driver threads while the process exits.
Queue& GetQueue() {
  static Queue* queue = new Queue;
  return *queue;
}

}  // namespace

void ReleaseLater(std::vector<PyObject*> references) {
  Queue& queue = GetQueue();
  absl::MutexLock lock(&queue.mu);
  if (queue.references.empty()) {
    queue.references = std::move(references);
    return;
  }
  queue.references.insert(queue.references.end(), references.begin(),
                          references.end());
}

void CollectReleased() {
  std::vector<PyObject*> references;
  {
    Queue& queue = GetQueue();
    absl::MutexLock lock(&queue.mu);
    references.swap(queue.references);
  }
  // Outside the lock: a decref may run arbitrary Python code (__del__).
  for (PyObject* reference : references) Py_DECREF(reference);
}

}  // namespace tpu::python
