#include "tools/tpu_run/npz.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tpu {
namespace {

constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;

uint32_t Read16(absl::string_view s, size_t at) {
  return static_cast<uint8_t>(s[at]) | (static_cast<uint8_t>(s[at + 1]) << 8);
}
uint32_t Read32(absl::string_view s, size_t at) {
  return Read16(s, at) | (Read16(s, at + 2) << 16);
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("not a valid .npz: ", what));
}

// Raw deflate (zip method 8) of `compressed` into exactly `size` bytes.
absl::StatusOr<std::string> Inflate(absl::string_view compressed, size_t size,
                                    const std::string& member) {
  std::string out(size, '\0');
  z_stream stream;
  std::memset(&stream, 0, sizeof(stream));
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) {
    return absl::InternalError("zlib inflateInit2 failed");
  }
  stream.next_in =
      reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&stream, Z_FINISH);
  inflateEnd(&stream);
  if (rc != Z_STREAM_END || stream.total_out != size) {
    return Bad(absl::StrCat("member ", member, " does not inflate to ", size,
                            " bytes"));
  }
  return out;
}

// The member whose central directory entry starts at `at`; advances `at`.
absl::StatusOr<NpzMember> ReadMember(absl::string_view zip, size_t& at) {
  if (at + 46 > zip.size() || Read32(zip, at) != kCentralHeader) {
    return Bad("truncated central directory");
  }
  const uint32_t flags = Read16(zip, at + 8);
  const uint32_t method = Read16(zip, at + 10);
  const uint32_t compressed_size = Read32(zip, at + 20);
  const uint32_t size = Read32(zip, at + 24);
  const uint32_t name_length = Read16(zip, at + 28);
  const uint32_t extra_length = Read16(zip, at + 30);
  const uint32_t comment_length = Read16(zip, at + 32);
  const uint32_t offset = Read32(zip, at + 42);
  if (at + 46 + name_length > zip.size()) return Bad("truncated file name");
  std::string name(zip.substr(at + 46, name_length));
  at += 46 + name_length + extra_length + comment_length;
  if (compressed_size == 0xFFFFFFFFu || size == 0xFFFFFFFFu ||
      offset == 0xFFFFFFFFu) {
    return absl::InvalidArgumentError(
        absl::StrCat("member ", name,
                     " needs zip64, which is not supported: save arrays "
                     "under 4 GiB each, or as separate .npy files"));
  }
  if ((flags & 1) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("member ", name, " is encrypted"));
  }
  if (offset + 30 > zip.size() || Read32(zip, offset) != kLocalHeader) {
    return Bad(absl::StrCat("member ", name, " has no local header"));
  }
  const size_t data =
      offset + 30 + Read16(zip, offset + 26) + Read16(zip, offset + 28);
  if (data + compressed_size > zip.size()) {
    return Bad(absl::StrCat("member ", name, " is truncated"));
  }
  const absl::string_view stored = zip.substr(data, compressed_size);
  std::string contents;
  if (method == 0) {
    contents = std::string(stored);
  } else if (method == 8) {
    absl::StatusOr<std::string> inflated = Inflate(stored, size, name);
    if (!inflated.ok()) return inflated.status();
    contents = *std::move(inflated);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("member ", name, " uses zip compression method ", method,
                     "; save with numpy.savez or numpy.savez_compressed"));
  }
  absl::StatusOr<NpyArray> array = ParseNpy(contents);
  if (!array.ok()) {
    return absl::Status(
        array.status().code(),
        absl::StrCat("member ", name, ": ", array.status().message()));
  }
  if (absl::EndsWith(name, ".npy")) name.resize(name.size() - 4);
  return NpzMember{std::move(name), *std::move(array)};
}

}  // namespace

absl::StatusOr<std::vector<NpzMember>> ParseNpz(absl::string_view zip) {
  // The end-of-central-directory record: the last 22 bytes, or earlier when
  // the archive has a comment.
  if (zip.size() < 22) return Bad("shorter than a zip end record");
  size_t end = zip.size() - 22;
  while (Read32(zip, end) != kEndOfCentralDirectory) {
    if (end == 0 || zip.size() - end > 22 + 0xFFFF) {
      return Bad("no zip end-of-central-directory record");
    }
    --end;
  }
  const uint32_t count = Read16(zip, end + 10);
  size_t at = Read32(zip, end + 16);
  std::vector<NpzMember> members;
  for (uint32_t i = 0; i < count; ++i) {
    absl::StatusOr<NpzMember> member = ReadMember(zip, at);
    if (!member.ok()) return member.status();
    members.push_back(*std::move(member));
  }
  return members;
}

absl::StatusOr<std::vector<NpzMember>> ReadNpzFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<std::vector<NpzMember>> members = ParseNpz(buffer.str());
  if (!members.ok()) {
    return absl::Status(members.status().code(),
                        absl::StrCat(path, ": ", members.status().message()));
  }
  return members;
}

}  // namespace tpu
