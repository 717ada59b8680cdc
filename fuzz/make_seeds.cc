// Writes the seed corpora of the fuzz targets that take binary protos:
//   make_seeds OUT_DIR HLO_FILE...
// OUT_DIR/hlo_module_fuzzer/ gets each HLO text module as an HloModuleProto;
// OUT_DIR/worker_stream_fuzzer/ gets StreamRequests as the tests send them
// (ids of client 1, which the target moves to the client it opens);
// OUT_DIR/wire_slices_fuzzer/ gets a slicing byte plus serialized requests
// and responses with transfer payloads.

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/worker/test_programs.h"
#include "emulator/worker/test_requests.h"
#include "hlo/shape.h"
#include "hlo/text/hlo_parser.h"
#include "proto/tpu_service.pb.h"

namespace {

namespace tr = tpu::emulator::test_requests;
namespace programs = tpu::emulator::test_programs;

bool Write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::fprintf(stderr, "Cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

tpu_driver::StreamRequest Request(std::vector<tr::Entry> entries) {
  tpu_driver::StreamRequest request;
  for (auto& e : entries) *request.add_entry() = std::move(e);
  return request;
}

int64_t Id(uint64_t op) { return tr::Id(1, op); }

std::vector<tpu_driver::StreamRequest> StreamSeeds() {
  const tpu::Shape f32x4 = tpu::Shape::Array(xla::F32, std::vector<int64_t>{4});
  std::vector<tpu_driver::StreamRequest> seeds;
  // Buffers: alloc, write, read back, copy, tuple, free.
  seeds.push_back(Request({
      tr::AllocShape(Id(1), 0, f32x4),
      tr::TransferTo(Id(2), Id(1), tr::F32Bytes({1, 2, 3, 4}), {Id(1)}),
      tr::TransferFrom(Id(3), Id(1), {Id(2)}),
      tr::AllocBytes(Id(4), 1, 16),
      tr::TransferFromTo(Id(5), Id(1), Id(4), {Id(2), Id(4)}),
      tr::AllocTuple(Id(6), 0, {Id(1)}, {Id(1)}),
      tr::Dealloc(Id(7), Id(6), {Id(6)}),
      tr::Dealloc(Id(8), Id(1), {Id(3), Id(5)}),
      tr::Dealloc(Id(9), Id(4), {Id(5)}),
  }));
  // A program: compile, load, execute, read the result, unload.
  seeds.push_back(Request({
      tr::Compile(Id(1), programs::AddF32(4)),
      tr::Load(Id(2), 0, Id(1), {Id(1)}),
      tr::AllocShape(Id(3), 0, f32x4),
      tr::AllocShape(Id(4), 0, f32x4),
      tr::TransferTo(Id(5), Id(3), tr::F32Bytes({1, 2, 3, 4}), {Id(3)}),
      tr::TransferTo(Id(6), Id(4), tr::F32Bytes({5, 6, 7, 8}), {Id(4)}),
      tr::AllocShape(Id(7), 0, f32x4),
      tr::Execute(Id(8), Id(2), {Id(3), Id(4)}, {Id(7)}, 0,
                  {Id(2), Id(5), Id(6), Id(7)}),
      tr::TransferFrom(Id(9), Id(7), {Id(8)}),
      tr::Unload(Id(10), Id(2), {Id(8)}),
  }));
  seeds.push_back(Request({
      tr::Compile(Id(1), programs::AddAndMultiplyTuple(2)),
      tr::Compile(Id(2), programs::SumTupleParameter(2)),
      tr::Compile(Id(3), programs::ReplicaId()),
      tr::Compile(Id(4), programs::UnknownOpcode()),
  }));
  // Errors: unknown handles, a wrong size, a dealloc twice.
  seeds.push_back(Request({
      tr::TransferFrom(Id(1), Id(99)),
      tr::AllocBytes(Id(2), 0, 8),
      tr::TransferTo(Id(3), Id(2), "too long for eight", {Id(2)}),
      tr::Dealloc(Id(4), Id(2), {Id(3)}),
      tr::Dealloc(Id(5), Id(2), {Id(4)}),
  }));
  return seeds;
}

std::vector<tpu_driver::StreamResponse> ResponseSeeds() {
  std::vector<tpu_driver::StreamResponse> seeds(1);
  auto* read = seeds[0].add_entry();
  read->set_operation_id(Id(3));
  read->mutable_status()->set_code(0);
  read->mutable_transfer_from()->set_data(tr::F32Bytes({1, 2, 3, 4}));
  auto* failed = seeds[0].add_entry();
  failed->set_operation_id(Id(4));
  failed->mutable_status()->set_code(5);
  failed->mutable_status()->set_message("operation 99 (client 1) not found");
  return seeds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR HLO_FILE...\n");
    return 2;
  }
  const std::string out = argv[1];
  bool ok = true;
  for (int i = 2; i < argc; ++i) {
    std::ifstream file(argv[i], std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(file)),
                     std::istreambuf_iterator<char>());
    auto module = tpu::hlo::ParseHloModule(text);
    if (!module.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[i],
                   module.status().ToString().c_str());
      ok = false;
      continue;
    }
    std::string name = argv[i];
    name = name.substr(name.find_last_of('/') + 1);
    ok &= Write(absl::StrCat(out, "/hlo_module_fuzzer/", name, ".pb"),
                module->SerializeAsString());
  }
  std::vector<tpu_driver::StreamRequest> requests = StreamSeeds();
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string bytes = requests[i].SerializeAsString();
    ok &=
        Write(absl::StrCat(out, "/worker_stream_fuzzer/seed", i, ".pb"), bytes);
    // Cut 0 is one slice, 5 cuts into 16-byte slices.
    ok &= Write(absl::StrCat(out, "/wire_slices_fuzzer/request", i, ".bin"),
                std::string(1, static_cast<char>(i == 0 ? 0 : 5)) + bytes);
  }
  std::vector<tpu_driver::StreamResponse> responses = ResponseSeeds();
  for (size_t i = 0; i < responses.size(); ++i) {
    ok &= Write(absl::StrCat(out, "/wire_slices_fuzzer/response", i, ".bin"),
                std::string(1, '\3') + responses[i].SerializeAsString());
  }
  return ok ? 0 : 1;
}
