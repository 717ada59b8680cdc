#ifndef SOFTWARE_TPU_EMULATOR_TEST_REQUESTS_H_
#define SOFTWARE_TPU_EMULATOR_TEST_REQUESTS_H_

// Builders of StreamRequest entries for tests, written as the real client
// fills them in. Ids are wire ids (client_id << 44 | operation number).
//
// Thread safety: free functions.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hlo/shape.h"
#include "proto/event_id.h"
#include "proto/hlo.pb.h"
#include "proto/tpu_service.pb.h"

namespace tpu::emulator {
namespace test_requests {

using Entry = tpu_driver::StreamRequest::Entry;

inline int64_t Id(uint32_t client, uint64_t op) {
  return EventId{client, op}.AsInt();
}

inline Entry Base(int64_t id, std::vector<int64_t> wait_for = {}) {
  Entry e;
  e.set_operation_id(id);
  for (int64_t w : wait_for) e.add_wait_for_id(w);
  return e;
}

inline Entry AllocBytes(int64_t id, int core, int64_t bytes,
                        std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_alloc()->set_core_id(core);
  e.mutable_alloc()->set_region(tpu_driver::HBM);
  e.mutable_alloc()->set_num_bytes(bytes);
  return e;
}

inline Entry AllocShape(int64_t id, int core, const Shape& shape,
                        std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_alloc()->set_core_id(core);
  e.mutable_alloc()->set_region(tpu_driver::HBM);
  *e.mutable_alloc()->mutable_shape() = shape.ToProto();
  return e;
}

inline Entry AllocTuple(int64_t id, int core, std::vector<int64_t> children,
                        std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_alloc_tuple()->set_core_id(core);
  e.mutable_alloc_tuple()->set_region(tpu_driver::HBM);
  for (int64_t c : children) e.mutable_alloc_tuple()->add_children(c);
  return e;
}

inline Entry Dealloc(int64_t id, int64_t handle,
                     std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_dealloc()->set_handle(handle);
  return e;
}

inline Entry TransferTo(int64_t id, int64_t handle, std::string data,
                        std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_transfer_to()->set_target_handle(handle);
  e.mutable_transfer_to()->set_data(std::move(data));
  return e;
}

inline Entry TransferFrom(int64_t id, int64_t handle,
                          std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_transfer_from()->set_source_handle(handle);
  return e;
}

inline Entry TransferFromTo(int64_t id, int64_t src, int64_t dst,
                            std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_transfer_from_to()->set_source_handle(src);
  e.mutable_transfer_from_to()->set_target_handle(dst);
  return e;
}

inline Entry Compile(int64_t id, const xla::HloProto& hlo,
                     int64_t num_replicas = 1,
                     std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  *e.mutable_compile()->mutable_hlo_program() = hlo;
  e.mutable_compile()->set_num_replicas(num_replicas);
  return e;
}

inline Entry Load(int64_t id, int core, int64_t compiled,
                  std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_load()->set_core_id(core);
  e.mutable_load()->set_compiled_program_handle(compiled);
  return e;
}

inline Entry Unload(int64_t id, int64_t loaded,
                    std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  e.mutable_unload()->set_loaded_program_handle(loaded);
  return e;
}

// With a 1 x 1 device assignment naming `core`, as the real client sends
// for one replica.
inline Entry Execute(int64_t id, int64_t loaded, std::vector<int64_t> inputs,
                     std::vector<int64_t> outputs, int core,
                     std::vector<int64_t> wait_for = {}) {
  Entry e = Base(id, wait_for);
  auto* x = e.mutable_execute();
  x->set_loaded_program_handle(loaded);
  for (int64_t i : inputs) x->add_input_handle(i);
  for (int64_t o : outputs) x->add_output_handle(o);
  auto* da = x->mutable_device_assignment();
  da->set_replica_count(1);
  da->set_computation_count(1);
  da->add_computation_devices()->add_replica_device_ids(core);
  return e;
}

inline std::string F32Bytes(const std::vector<float>& values) {
  std::string s(values.size() * sizeof(float), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

inline std::vector<float> FromF32Bytes(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

inline std::string S32Bytes(int32_t value) {
  std::string s(sizeof(value), '\0');
  std::memcpy(s.data(), &value, sizeof(value));
  return s;
}

}  // namespace test_requests
}  // namespace tpu::emulator

#endif  // SOFTWARE_TPU_EMULATOR_TEST_REQUESTS_H_
