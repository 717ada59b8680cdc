#include "hlo/aligned_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace tpu {

namespace {

// Buffers this large are placed on transparent huge pages: a first touch of a
// 256 MiB transfer otherwise takes 65,536 page faults, which cost more than
// the copy itself. Smaller buffers stay on ordinary pages, where a 2 MiB
// alignment would waste memory.
constexpr size_t kHugePageThreshold = size_t{4} << 20;
constexpr size_t kHugePageSize = size_t{2} << 20;

// Freed large blocks kept for reuse, by exact size. A program run allocates
// the same intermediates every step; a fresh block costs the kernel's zeroing
// of every page on first touch (a 64 MiB result: ~5 ms, more than the
// elementwise kernel that fills it), a recycled one costs nothing. Bounded,
// so an idle emulator holds at most kCapacity of memory it does not use.
class LargeBlockCache {
 public:
  static constexpr size_t kCapacity = size_t{512} << 20;

  static LargeBlockCache& Get() {
    static LargeBlockCache* cache = new LargeBlockCache();
    return *cache;
  }

  void* Take(size_t size) {
    absl::MutexLock lock(&mu_);
    auto it = blocks_.find(size);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= size;
    return block;
  }

  void FreeAll() {
    absl::flat_hash_map<size_t, std::vector<void*>> blocks;
    {
      absl::MutexLock lock(&mu_);
      blocks.swap(blocks_);
      cached_bytes_ = 0;
    }
    for (auto& [size, list] : blocks) {
      for (void* block : list) std::free(block);
    }
  }

  // Keeps `block` if there is room; false means the caller frees it.
  bool Put(void* block, size_t size) {
    absl::MutexLock lock(&mu_);
    if (cached_bytes_ + size > kCapacity) return false;
    blocks_[size].push_back(block);
    cached_bytes_ += size;
    return true;
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<size_t, std::vector<void*>> blocks_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

size_t BlockSize(int64_t size) {
  const size_t requested = static_cast<size_t>(size < 0 ? 0 : size);
  const size_t alignment = requested >= kHugePageThreshold
                               ? kHugePageSize
                               : AlignedBuffer::kAlignment;
  // aligned_alloc needs a multiple of the alignment, and a zero-byte request
  // must still give a distinct, freeable pointer.
  const size_t rounded = (requested + alignment - 1) / alignment * alignment;
  return rounded == 0 ? alignment : rounded;
}

bool IsLarge(size_t block_size) { return block_size >= kHugePageThreshold; }

// Blocks up to this size come from malloc, aligned by hand: glibc's
// aligned_alloc splits and later coalesces chunks around each block, which
// for the small payloads of a stream of small transfers cost more than the
// copy of the data (a quarter of a small transfer_to's time in the worker).
constexpr size_t kSmallBlockSize = 1024;

bool IsSmall(size_t block_size) { return block_size <= kSmallBlockSize; }

// A block of `block_size` bytes aligned to AlignedBuffer::kAlignment, from
// malloc; the pointer malloc returned is kept just before it. Null if
// refused.
void* AllocateSmall(size_t block_size) {
  constexpr size_t kAlignment = AlignedBuffer::kAlignment;
  void* raw = std::malloc(block_size + kAlignment);
  if (raw == nullptr) return nullptr;
  // malloc aligns to at least 16 bytes, so there is room for the pointer
  // between `raw` and the next multiple of kAlignment past it.
  const uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(raw) + kAlignment) & ~(kAlignment - 1);
  reinterpret_cast<void**>(aligned)[-1] = raw;
  return reinterpret_cast<void*>(aligned);
}

void FreeSmall(void* block) { std::free(static_cast<void**>(block)[-1]); }

}  // namespace

absl::StatusOr<std::shared_ptr<AlignedBuffer>> AlignedBuffer::TryAllocate(
    int64_t size) {
  if (size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot allocate a negative byte count (", size, ")"));
  }
  MemoryBudget* budget = MemoryBudget::Process();
  if (budget != nullptr) {
    absl::Status charged = budget->Charge(size);
    if (!charged.ok()) return charged;
  }
  const size_t block_size = BlockSize(size);
  void* data = nullptr;
  if (IsLarge(block_size)) {
    data = LargeBlockCache::Get().Take(block_size);
    if (data == nullptr) {
      data = std::aligned_alloc(kHugePageSize, block_size);
      // Advisory: without THP support the buffer simply uses small pages.
      if (data != nullptr) (void)madvise(data, block_size, MADV_HUGEPAGE);
    }
  } else if (IsSmall(block_size)) {
    data = AllocateSmall(block_size);
  } else {
    data = std::aligned_alloc(kAlignment, block_size);
  }
  if (data == nullptr) {
    if (budget != nullptr) budget->Release(size);
    return absl::ResourceExhaustedError(absl::StrCat(
        "host memory exhausted: the system refused ", FormatByteCount(size),
        ". Free buffers or make the request smaller."));
  }
  return std::shared_ptr<AlignedBuffer>(
      new AlignedBuffer(data, size, budget, /*mapped=*/false));
}

std::shared_ptr<AlignedBuffer> AlignedBuffer::Allocate(int64_t size) {
  absl::StatusOr<std::shared_ptr<AlignedBuffer>> buffer = TryAllocate(size);
  if (!buffer.ok()) {
    throw HostMemoryExhausted(std::string(buffer.status().message()));
  }
  return *std::move(buffer);
}

std::shared_ptr<AlignedBuffer> AlignedBuffer::AllocateZeroed(int64_t size) {
  std::shared_ptr<AlignedBuffer> buffer = Allocate(size);
  if (size > 0) std::memset(buffer->data(), 0, static_cast<size_t>(size));
  return buffer;
}

absl::StatusOr<std::shared_ptr<AlignedBuffer>> AlignedBuffer::ReadOnlyZeros(
    int64_t size) {
  if (size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot map a negative byte count (", size, ")"));
  }
  const size_t length = size == 0 ? 1 : static_cast<size_t>(size);
  void* data = mmap(nullptr, length, PROT_READ,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host memory exhausted: could not map ",
                     FormatByteCount(size), " of zeros."));
  }
  return std::shared_ptr<AlignedBuffer>(
      new AlignedBuffer(data, size, /*budget=*/nullptr, /*mapped=*/true));
}

void AlignedBuffer::DropCachedBlocks() { LargeBlockCache::Get().FreeAll(); }

AlignedBuffer::~AlignedBuffer() {
  if (mapped_) {
    munmap(data_, size_ == 0 ? 1 : static_cast<size_t>(size_));
    return;
  }
  if (budget_ != nullptr) budget_->Release(size_);
  const size_t block_size = BlockSize(size_);
  if (IsLarge(block_size) && LargeBlockCache::Get().Put(data_, block_size)) {
    return;
  }
  if (IsSmall(block_size)) {
    FreeSmall(data_);
    return;
  }
  std::free(data_);
}

}  // namespace tpu
