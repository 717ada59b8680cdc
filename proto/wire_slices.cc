#include "proto/wire_slices.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace tpu {
namespace wire {

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

size_t VarintSize(uint64_t value) {
  size_t size = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++size;
  }
  return size;
}

}  // namespace wire

SliceReader::SliceReader(std::vector<grpc::Slice> slices)
    : slices_(std::move(slices)) {
  starts_.reserve(slices_.size() + 1);
  size_t total = 0;
  for (const grpc::Slice& slice : slices_) {
    starts_.push_back(total);
    total += slice.size();
  }
  starts_.push_back(total);
}

bool SliceReader::FromByteBuffer(const grpc::ByteBuffer& buffer,
                                 SliceReader* reader) {
  std::vector<grpc::Slice> slices;
  if (buffer.Length() > 0 && !buffer.Dump(&slices).ok()) {
    *reader = SliceReader();
    return false;
  }
  *reader = SliceReader(std::move(slices));
  return true;
}

size_t SliceReader::SliceAt(size_t offset) const {
  return std::upper_bound(starts_.begin(), starts_.end(), offset) -
         starts_.begin() - 1;
}

void SliceReader::Copy(size_t offset, size_t n, void* out) const {
  if (n == 0) return;
  char* dst = static_cast<char*>(out);
  for (size_t i = SliceAt(offset); n > 0; ++i) {
    const size_t in_slice = offset - starts_[i];
    const size_t take = std::min(n, slices_[i].size() - in_slice);
    std::memcpy(dst, slices_[i].begin() + in_slice, take);
    dst += take;
    offset += take;
    n -= take;
  }
}

void SliceReader::AppendTo(size_t offset, size_t n, std::string* out) const {
  const size_t at = out->size();
  out->resize(at + n);
  Copy(offset, n, out->data() + at);
}

bool SliceReader::ReadVarint(size_t* offset, uint64_t* value) const {
  *value = 0;
  if (*offset >= size()) return false;
  size_t i = SliceAt(*offset);
  size_t in_slice = *offset - starts_[i];
  for (int shift = 0; shift < 64; shift += 7) {
    while (in_slice == slices_[i].size()) {
      if (++i == slices_.size()) return false;
      in_slice = 0;
    }
    const uint8_t byte = slices_[i].begin()[in_slice++];
    ++*offset;
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool SliceReader::ReadLength(size_t end, size_t* offset, size_t* length) const {
  uint64_t value;
  if (!ReadVarint(offset, &value) || *offset > end || value > end - *offset) {
    return false;
  }
  *length = static_cast<size_t>(value);
  return true;
}

bool SliceReader::SkipValue(uint32_t wire_type, size_t end,
                            size_t* offset) const {
  uint64_t ignored;
  size_t length;
  if (*offset > end) return false;
  switch (wire_type) {
    case wire::kVarint:
      return ReadVarint(offset, &ignored) && *offset <= end;
    case wire::kFixed64:
      if (end - *offset < 8) return false;
      *offset += 8;
      return true;
    case wire::kFixed32:
      if (end - *offset < 4) return false;
      *offset += 4;
      return true;
    case wire::kLengthDelimited:
      if (!ReadLength(end, offset, &length)) return false;
      *offset += length;
      return true;
    default:
      return false;
  }
}

void SliceWriter::CommitText() {
  if (text_.empty()) return;
  size_ += static_cast<int64_t>(text_.size());
  slices_.emplace_back(text_.data(), text_.size());  // Copies: small.
  text_.clear();
}

void SliceWriter::AddSlice(grpc::Slice slice) {
  CommitText();
  if (slice.size() == 0) return;
  size_ += static_cast<int64_t>(slice.size());
  slices_.push_back(std::move(slice));
}

grpc::ByteBuffer SliceWriter::Finish() {
  CommitText();
  grpc::ByteBuffer buffer(slices_.data(), slices_.size());
  slices_.clear();
  size_ = 0;
  return buffer;
}

}  // namespace tpu
