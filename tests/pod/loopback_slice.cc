#include "tests/pod/loopback_slice.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/lib/ports.h"

namespace tpu::tests {

absl::StatusOr<std::vector<std::unique_ptr<tools::ServerProcess>>>
StartLoopbackSlice(int hosts, const std::string& name) {
  std::vector<std::string> addresses;
  std::vector<int> ports;
  for (int h = 0; h < hosts; ++h) {
    absl::StatusOr<int> port = tools::UnusedLoopbackPort();
    if (!port.ok()) return port.status();
    ports.push_back(*port);
    addresses.push_back(absl::StrCat("127.0.0.1:", *port));
  }
  std::vector<std::unique_ptr<tools::ServerProcess>> slice;
  for (int h = 0; h < hosts; ++h) {
    std::vector<std::string> argv = {
        tools::RunfilePath("tools/tpu_emulator/tpu_emulator"),
        absl::StrCat("--port=", ports[h]),
        "--chips=2",
        "--cores_per_chip=2",
        "--compute_threads=1",
        absl::StrCat("--pod_hosts=", hosts),
        absl::StrCat("--host_id=", h),
        absl::StrCat("--pod_addresses=", absl::StrJoin(addresses, ","))};
    auto worker = tools::ServerProcess::Start(argv, tools::ScratchDir(),
                                              absl::StrCat(name, "_host", h));
    if (!worker.ok()) return worker.status();
    slice.push_back(*std::move(worker));
  }
  return slice;
}

}  // namespace tpu::tests
