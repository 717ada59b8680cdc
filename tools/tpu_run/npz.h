#ifndef SOFTWARE_TPU_TOOLS_TPU_RUN_NPZ_H_
#define SOFTWARE_TPU_TOOLS_TPU_RUN_NPZ_H_

// NumPy's .npz archives (numpy.savez and numpy.savez_compressed): a zip file
// whose members are .npy files. Members stored or deflated are read; other
// compression methods, encrypted members and zip64 archives are rejected
// with an error that says how to re-save the file.
//
// Thread safety: plain functions.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/tpu_run/npy.h"

namespace tpu {

// One array of an archive: its member name without ".npy" ("arr_0" for the
// positional arguments of numpy.savez) and the array.
struct NpzMember {
  std::string name;
  NpyArray array;
};

// Parses the contents of a .npz file; members in archive order.
// INVALID_ARGUMENT names the member or structure that is wrong.
absl::StatusOr<std::vector<NpzMember>> ParseNpz(absl::string_view contents);

// Reads and parses `path`; errors name the path. NOT_FOUND if missing.
absl::StatusOr<std::vector<NpzMember>> ReadNpzFile(const std::string& path);

}  // namespace tpu

#endif  // SOFTWARE_TPU_TOOLS_TPU_RUN_NPZ_H_
