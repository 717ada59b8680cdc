#include "proto/wire_slices.h"

#include <algorithm>
#include <cstring>
#include <system_error>
#include <thread>
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

namespace {

// A transfer's payload is copied out of gRPC's slices only once its whole
// message has arrived, when the peer and gRPC's own threads are idle: the
// copy alone then stands between the last byte and the transfer completing.
// Split across the idle cores it takes half as long (256 MiB: ~25 ms -> ~13
// ms on two cores; the transfer ~10% faster end to end). Below this size a
// thread's start costs more than it saves.
constexpr size_t kParallelCopyBytes = size_t{8} << 20;
constexpr size_t kMinBytesPerCopyThread = size_t{4} << 20;
constexpr size_t kMaxCopyThreads = 4;

size_t CopyThreads(size_t n) {
  if (n < kParallelCopyBytes) return 1;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::min({cores, kMaxCopyThreads, n / kMinBytesPerCopyThread});
}

}  // namespace

void SliceReader::Copy(size_t offset, size_t n, void* out) const {
  char* dst = static_cast<char*>(out);
  const size_t threads = CopyThreads(n);
  if (threads <= 1) return CopyRange(offset, n, dst);
  const size_t part = n / threads;
  std::vector<std::thread> helpers;
  size_t serial_from = n;  // Parts no thread could be started for.
  for (size_t p = 1; p < threads; ++p) {
    const size_t begin = p * part;
    const size_t end = p + 1 == threads ? n : begin + part;
    try {
      helpers.emplace_back([this, offset, dst, begin, end] {
        CopyRange(offset + begin, end - begin, dst + begin);
      });
    } catch (const std::system_error&) {
      serial_from = begin;
      break;
    }
  }
  CopyRange(offset, part, dst);
  if (serial_from < n) {
    CopyRange(offset + serial_from, n - serial_from, dst + serial_from);
  }
  for (std::thread& helper : helpers) helper.join();
}

void SliceReader::CopyRange(size_t offset, size_t n, char* dst) const {
  if (n == 0) return;
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

bool SliceReader::SkipField(uint64_t tag, size_t end, size_t* offset) const {
  if (wire::WireTypeOf(tag) != wire::kStartGroup) {
    return SkipValue(wire::WireTypeOf(tag), end, offset);
  }
  // Protobuf keeps unknown groups, so a message holding one is valid: skip
  // to the end tag of each open group, innermost first.
  std::vector<uint32_t> open_groups = {wire::FieldOf(tag)};
  while (!open_groups.empty()) {
    if (*offset >= end) return false;
    uint64_t inner;
    if (!ReadVarint(offset, &inner) || *offset > end) return false;
    if (wire::FieldOf(inner) == 0) return false;
    switch (wire::WireTypeOf(inner)) {
      case wire::kStartGroup:
        if (open_groups.size() >= wire::kMaxGroupDepth) return false;
        open_groups.push_back(wire::FieldOf(inner));
        break;
      case wire::kEndGroup:
        if (wire::FieldOf(inner) != open_groups.back()) return false;
        open_groups.pop_back();
        break;
      default:
        if (!SkipValue(wire::WireTypeOf(inner), end, offset)) return false;
    }
  }
  return true;
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

bool FindNestedBytes(const SliceReader& reader, size_t begin, size_t end,
                     NestedBytes nested, NestedBytesAt* at) {
  *at = NestedBytesAt();
  size_t offset = begin;
  while (offset < end) {
    const size_t outer_begin = offset;
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag != wire::LengthDelimitedTag(nested.outer)) {
      // Protobuf parses a sibling only with its own (length-delimited) wire
      // type; with another it is an unknown field and clears nothing.
      const uint32_t field = wire::FieldOf(tag);
      if (wire::WireTypeOf(tag) == wire::kLengthDelimited && field < 64 &&
          (nested.oneof_siblings & OneofBit(field)) != 0) {
        *at = NestedBytesAt();
      }
      if (!reader.SkipField(tag, end, &offset)) return false;
      continue;
    }
    size_t length;
    if (!reader.ReadLength(end, &offset, &length)) return false;
    const size_t outer_value = offset;
    const size_t outer_end = offset + length;
    while (offset < outer_end) {
      const size_t field_begin = offset;
      uint64_t inner;
      if (!reader.ReadVarint(&offset, &inner)) return false;
      if (inner != wire::LengthDelimitedTag(nested.inner)) {
        if (!reader.SkipField(inner, outer_end, &offset)) {
          return false;
        }
        continue;
      }
      size_t size;
      if (!reader.ReadLength(outer_end, &offset, &size)) return false;
      *at = {true,        nested.outer, outer_begin, outer_end,
             outer_value, field_begin,  offset,      size};
      offset += size;
    }
  }
  return offset == end;
}

void AppendWithoutNestedBytes(const SliceReader& reader, size_t begin,
                              size_t end, const NestedBytesAt& at,
                              std::string* out) {
  reader.AppendTo(begin, at.outer_begin - begin, out);
  const size_t field_end = at.offset + at.size;
  const size_t rest =
      (at.field_begin - at.outer_value) + (at.outer_end - field_end);
  wire::AppendVarint(wire::LengthDelimitedTag(at.outer), out);
  wire::AppendVarint(rest, out);
  reader.AppendTo(at.outer_value, at.field_begin - at.outer_value, out);
  reader.AppendTo(field_end, at.outer_end - field_end, out);
  reader.AppendTo(at.outer_end, end - at.outer_end, out);
}

namespace {

// Sizes of `outer { inner: payload }` and of its `inner` field.
struct PayloadFieldSizes {
  size_t inner;
  size_t outer;
};

PayloadFieldSizes SizesOf(NestedBytes nested, size_t payload_size) {
  PayloadFieldSizes sizes;
  sizes.inner = wire::VarintSize(wire::LengthDelimitedTag(nested.inner)) +
                wire::VarintSize(payload_size) + payload_size;
  sizes.outer = wire::VarintSize(wire::LengthDelimitedTag(nested.outer)) +
                wire::VarintSize(sizes.inner) + sizes.inner;
  return sizes;
}

size_t FieldSize(uint32_t field, size_t value_size) {
  return wire::VarintSize(wire::LengthDelimitedTag(field)) +
         wire::VarintSize(value_size) + value_size;
}

}  // namespace

size_t FieldWithPayloadSize(uint32_t field,
                            const google::protobuf::MessageLite& message,
                            NestedBytes nested, const size_t* payload_size) {
  size_t value = message.ByteSizeLong();
  if (payload_size != nullptr) value += SizesOf(nested, *payload_size).outer;
  return FieldSize(field, value);
}

size_t AppendFieldUpToPayload(uint32_t field,
                              const google::protobuf::MessageLite& message,
                              NestedBytes nested, const size_t* payload_size,
                              std::string* out) {
  const size_t message_size = message.ByteSizeLong();
  PayloadFieldSizes sizes = {0, 0};
  if (payload_size != nullptr) sizes = SizesOf(nested, *payload_size);
  wire::AppendVarint(wire::LengthDelimitedTag(field), out);
  wire::AppendVarint(message_size + sizes.outer, out);
  const size_t at = out->size();
  out->resize(at + message_size);
  message.SerializePartialToArray(out->data() + at,
                                  static_cast<int>(message_size));
  if (payload_size != nullptr) {
    wire::AppendVarint(wire::LengthDelimitedTag(nested.outer), out);
    wire::AppendVarint(sizes.inner, out);
    wire::AppendVarint(wire::LengthDelimitedTag(nested.inner), out);
    wire::AppendVarint(*payload_size, out);
  }
  return FieldSize(field, message_size + sizes.outer);
}

}  // namespace tpu
