#ifndef SOFTWARE_TPU_PROTO_WIRE_SLICES_H_
#define SOFTWARE_TPU_PROTO_WIRE_SLICES_H_

// Protobuf wire format over a message that gRPC holds as a list of slices.
//
// Both ends of StreamExecute move transfer payloads of up to gigabytes. Parsing
// such a message with protobuf first joins the slices into a std::string (and
// grows it by doubling, copying again each time); these helpers instead let a
// codec find a bytes field by offset and copy it once, straight to where it
// belongs. Only the framing is read here; small messages are still parsed by
// protobuf.
//
// Thread safety: SliceReader is immutable after construction.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"

namespace tpu {
namespace wire {

// Wire types (https://protobuf.dev/programming-guides/encoding/).
inline constexpr uint32_t kVarint = 0;
inline constexpr uint32_t kFixed64 = 1;
inline constexpr uint32_t kLengthDelimited = 2;
inline constexpr uint32_t kStartGroup = 3;
inline constexpr uint32_t kEndGroup = 4;
inline constexpr uint32_t kFixed32 = 5;
// Groups nest at most this deep, as protobuf's default recursion limit.
inline constexpr int kMaxGroupDepth = 100;

inline constexpr uint32_t FieldOf(uint64_t tag) {
  return static_cast<uint32_t>(tag >> 3);
}
inline constexpr uint32_t WireTypeOf(uint64_t tag) {
  return static_cast<uint32_t>(tag & 7);
}
inline constexpr uint32_t LengthDelimitedTag(uint32_t field) {
  return field << 3 | kLengthDelimited;
}

// Appends `value` as a varint.
void AppendVarint(uint64_t value, std::string* out);
// Bytes of `value` as a varint.
size_t VarintSize(uint64_t value);

}  // namespace wire

// Reads a message spread over slices, by absolute offset. Holds references to
// the slices, not copies.
class SliceReader {
 public:
  explicit SliceReader(std::vector<grpc::Slice> slices);
  // The slices of `buffer`; false (and an empty reader) if it is unreadable.
  static bool FromByteBuffer(const grpc::ByteBuffer& buffer,
                             SliceReader* reader);
  SliceReader() = default;

  size_t size() const { return starts_.empty() ? 0 : starts_.back(); }

  // Copies [offset, offset + n) to `out`. REQUIRES: within size().
  // Large copies are split across a few threads (see kParallelCopyBytes).
  void Copy(size_t offset, size_t n, void* out) const;
  // Appends [offset, offset + n) to `out`. REQUIRES: within size().
  void AppendTo(size_t offset, size_t n, std::string* out) const;

  // A varint at *offset, advancing it; false if malformed or truncated.
  bool ReadVarint(size_t* offset, uint64_t* value) const;
  // Skips the value of a field of `wire_type` at *offset, not past `end`;
  // false if malformed (groups, which nothing here sends, count as malformed).
  bool SkipValue(uint32_t wire_type, size_t end, size_t* offset) const;
  // Skips the value of the field whose `tag` was just read, as protobuf does
  // for an unknown field: like SkipValue, and a group up to its matching end
  // tag (nested at most wire::kMaxGroupDepth deep). False if malformed,
  // including an end-group tag with no group open.
  bool SkipField(uint64_t tag, size_t end, size_t* offset) const;
  // Reads the length of a length-delimited value at *offset, advancing it;
  // false if malformed or if the value would run past `end`.
  bool ReadLength(size_t end, size_t* offset, size_t* length) const;

 private:
  // The slice holding `offset`. REQUIRES: offset < size().
  size_t SliceAt(size_t offset) const;
  // Copy on the calling thread.
  void CopyRange(size_t offset, size_t n, char* out) const;

  std::vector<grpc::Slice> slices_;
  std::vector<size_t> starts_;  // offset of each slice, then the total
};

// A transfer's bytes as StreamExecute carries them: the bytes field `inner`
// of the message field `outer` of an entry (transfer_to.data of a request
// entry, transfer_from.data of a response entry). `outer` is a member of a
// oneof: bit f of `oneof_siblings` is set for each other member f (< 64).
// Protobuf clears `outer` when a sibling follows it, so a payload before a
// sibling is not the one protobuf keeps.
struct NestedBytes {
  uint32_t outer;
  uint32_t inner;
  uint64_t oneof_siblings = 0;
};

// The oneof_siblings bit of `field`.
constexpr uint64_t OneofBit(uint32_t field) { return uint64_t{1} << field; }

// Where the occurrence of a NestedBytes that protobuf keeps sits in a message:
// the last one (repeated occurrences of a message field merge, and the last
// value of a bytes field wins), unless a oneof sibling follows it.
struct NestedBytesAt {
  bool found = false;
  uint32_t outer = 0;      // the `outer` field number
  size_t outer_begin = 0;  // the `outer` field holding it, tag included
  size_t outer_end = 0;
  size_t outer_value = 0;  // where that field's contents start
  size_t field_begin = 0;  // the `inner` field, tag included
  size_t offset = 0;       // its bytes
  size_t size = 0;
};

// Finds `nested` in the message [begin, end); false if that is malformed.
bool FindNestedBytes(const SliceReader& reader, size_t begin, size_t end,
                     NestedBytes nested, NestedBytesAt* at);

// Appends the message [begin, end) without the field `at` found (re-framing
// the `outer` field that held it). REQUIRES: at.found.
void AppendWithoutNestedBytes(const SliceReader& reader, size_t begin,
                              size_t end, const NestedBytesAt& at,
                              std::string* out);

// Calls visit(begin, end) with the value of every length-delimited field
// `field` of the whole message, in order, skipping other fields as protobuf
// would. False if the framing is malformed or `visit` returned false.
template <typename Visit>
bool ForEachMessageField(const SliceReader& reader, uint32_t field,
                         Visit visit) {
  size_t offset = 0;
  while (offset < reader.size()) {
    uint64_t tag;
    if (!reader.ReadVarint(&offset, &tag)) return false;
    if (tag != wire::LengthDelimitedTag(field)) {
      if (!reader.SkipField(tag, reader.size(), &offset)) {
        return false;
      }
      continue;
    }
    size_t length;
    if (!reader.ReadLength(reader.size(), &offset, &length)) return false;
    if (!visit(offset, offset + length)) return false;
    offset += length;
  }
  return true;
}

// Writes field `field` holding `message` followed by, if `payload_size` is
// set, `nested.outer { nested.inner: <payload_size bytes> }` (which protobuf
// merges into the message's own `outer`), up to where the payload's bytes go:
// the caller adds those next, typically as a slice of their own. Returns the
// whole field's size, payload included. Serializes partially: the payload may
// be a required field.
size_t AppendFieldUpToPayload(uint32_t field,
                              const google::protobuf::MessageLite& message,
                              NestedBytes nested, const size_t* payload_size,
                              std::string* out);
// The size AppendFieldUpToPayload would return.
size_t FieldWithPayloadSize(uint32_t field,
                            const google::protobuf::MessageLite& message,
                            NestedBytes nested, const size_t* payload_size);

// Builds a message as a list of slices: framing and small fields are written
// as text, large payloads join as slices of their own, uncopied.
//
// Thread safety: thread-compatible.
class SliceWriter {
 public:
  // Bytes so far, including text not yet committed to a slice.
  int64_t size() const { return size_ + static_cast<int64_t>(text_.size()); }
  bool empty() const { return size() == 0; }

  // Where to write the next bytes of framing.
  std::string* text() { return &text_; }
  // Appends `slice` after the text written so far. Empty slices are dropped.
  void AddSlice(grpc::Slice slice);
  // The message; the writer is then empty.
  grpc::ByteBuffer Finish();

 private:
  void CommitText();

  std::string text_;
  std::vector<grpc::Slice> slices_;
  int64_t size_ = 0;
};

}  // namespace tpu

#endif  // SOFTWARE_TPU_PROTO_WIRE_SLICES_H_
