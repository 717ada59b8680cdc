#ifndef SOFTWARE_TPU_TESTS_DRIVER_CONFORMANCE_HLO_PROGRAMS_H_
#define SOFTWARE_TPU_TESTS_DRIVER_CONFORMANCE_HLO_PROGRAMS_H_

// Small HLO programs built by hand as protos (no parser needed), as a JAX or
// XLA client would send them.
//
// Thread safety: stateless functions.

#include <cstdint>

#include "proto/hlo.pb.h"
#include "proto/xla_data.pb.h"

namespace tpu {
namespace conformance {

xla::ShapeProto F32Array(int64_t n);

// (p0: f32[n], p1: f32[n]) -> f32[n]: p0 + p1.
xla::HloProto AddProgram(int64_t n);

// (p0: f32[n], p1: f32[n]) -> (f32[n], f32[n]): (p0 + p1, p0).
xla::HloProto AddAndTupleProgram(int64_t n);

}  // namespace conformance
}  // namespace tpu

#endif  // SOFTWARE_TPU_TESTS_DRIVER_CONFORMANCE_HLO_PROGRAMS_H_
