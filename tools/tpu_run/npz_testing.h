#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_NPZ_TESTING_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_NPZ_TESTING_H_

// Test-only: writes zip archives as numpy.savez (stored) and
// numpy.savez_compressed (deflated) do, without CRCs (the reader does not
// check them).

#include <zlib.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tpu::testing {

inline void Put16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>(v & 0xFF));
  s.push_back(static_cast<char>((v >> 8) & 0xFF));
}
inline void Put32(std::string& s, uint32_t v) {
  Put16(s, v & 0xFFFF);
  Put16(s, v >> 16);
}

inline std::string RawDeflate(const std::string& data) {
  z_stream stream{};
  deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8,
               Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, data.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = data.size();
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = out.size();
  deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// A zip archive as numpy writes one (CRCs are not checked by the reader).
inline std::string Zip(
    const std::vector<std::pair<std::string, std::string>>& files,
    bool deflate) {
  std::string zip, central;
  for (const auto& [name, data] : files) {
    const std::string stored = deflate ? RawDeflate(data) : data;
    const uint32_t offset = zip.size();
    Put32(zip, 0x04034b50);
    Put16(zip, 20);
    Put16(zip, 0);
    Put16(zip, deflate ? 8 : 0);
    Put32(zip, 0);  // time, date
    Put32(zip, 0);  // crc
    Put32(zip, stored.size());
    Put32(zip, data.size());
    Put16(zip, name.size());
    Put16(zip, 0);
    zip += name + stored;
    Put32(central, 0x02014b50);
    Put16(central, 20);
    Put16(central, 20);
    Put16(central, 0);
    Put16(central, deflate ? 8 : 0);
    Put32(central, 0);
    Put32(central, 0);
    Put32(central, stored.size());
    Put32(central, data.size());
    Put16(central, name.size());
    Put32(central, 0);  // extra, comment lengths
    Put32(central, 0);  // disk, internal attributes
    Put32(central, 0);  // external attributes
    Put32(central, offset);
    central += name;
  }
  const uint32_t central_offset = zip.size();
  zip += central;
  Put32(zip, 0x06054b50);
  Put32(zip, 0);
  Put16(zip, files.size());
  Put16(zip, files.size());
  Put32(zip, central.size());
  Put32(zip, central_offset);
  Put16(zip, 0);
  return zip;
}

}  // namespace tpu::testing

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_NPZ_TESTING_H_
