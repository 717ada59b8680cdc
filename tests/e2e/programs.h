#ifndef SOFTWARE_TPU_TESTS_E2E_PROGRAMS_H_
#define SOFTWARE_TPU_TESTS_E2E_PROGRAMS_H_

// HLO programs the end-to-end tests run, as HLO text, and a parse helper.
//
// Thread safety: constants and a reentrant function.

#include "absl/strings/string_view.h"
#include "proto/hlo.pb.h"

namespace tpu::e2e {

// relu(x . w + b): x f32[2,3], w f32[3,4], b f32[4] -> f32[2,4].
inline constexpr absl::string_view kMatmulBiasRelu = R"(
HloModule matmul_bias_relu

ENTRY main {
  x = f32[2,3] parameter(0)
  w = f32[3,4] parameter(1)
  b = f32[4] parameter(2)
  dot = f32[2,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bias = f32[2,4] broadcast(b), dimensions={1}
  sum = f32[2,4] add(dot, bias)
  zero = f32[] constant(0)
  zeros = f32[2,4] broadcast(zero), dimensions={}
  ROOT relu = f32[2,4] maximum(sum, zeros)
}
)";

// A tuple parameter and a nested tuple result:
// (t = (f32[2] a, s32[3] b), s32[] s) -> ((-a, b + s), s).
inline constexpr absl::string_view kTuples = R"(
HloModule tuples

ENTRY main {
  t = (f32[2], s32[3]) parameter(0)
  s = s32[] parameter(1)
  a = f32[2] get-tuple-element(t), index=0
  b = s32[3] get-tuple-element(t), index=1
  neg = f32[2] negate(a)
  sb = s32[3] broadcast(s), dimensions={}
  bs = s32[3] add(b, sb)
  inner = (f32[2], s32[3]) tuple(neg, bs)
  ROOT out = ((f32[2], s32[3]), s32[]) tuple(inner, s)
}
)";

// x * 2 + 1 on f32[4]: the per-replica program.
inline constexpr absl::string_view kTwiceXPlusOne = R"(
HloModule twice_x_plus_one

ENTRY main {
  x = f32[4] parameter(0)
  sum = f32[4] add(x, x)
  one = f32[] constant(1)
  ones = f32[4] broadcast(one), dimensions={}
  ROOT out = f32[4] add(sum, ones)
}
)";

// Array parameters and a nested tuple result whose leaves, in order, are
// y, x and x + x: (x f32[2], y s32[3]) -> (y, (x, x + x)).
inline constexpr absl::string_view kNestedResult = R"(
HloModule nested_result

ENTRY main {
  x = f32[2] parameter(0)
  y = s32[3] parameter(1)
  xx = f32[2] add(x, x)
  inner = (f32[2], f32[2]) tuple(x, xx)
  ROOT out = (s32[3], (f32[2], f32[2])) tuple(y, inner)
}
)";

// bf16 doubling: x bf16[3] -> x + x.
inline constexpr absl::string_view kBf16Double = R"(
HloModule bf16_double

ENTRY main {
  x = bf16[3] parameter(0)
  ROOT out = bf16[3] add(x, x)
}
)";

// An f64 parameter, which the client must refuse to transfer.
inline constexpr absl::string_view kF64Identity = R"(
HloModule f64_identity

ENTRY main {
  ROOT x = f64[2] parameter(0)
}
)";

// A while loop whose condition is always true: it never finishes.
inline constexpr absl::string_view kSpinForever = R"(
HloModule spin_forever

cond {
  c = s32[] parameter(0)
  ROOT always = pred[] constant(true)
}

body {
  i = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT next = s32[] add(i, one)
}

ENTRY main {
  zero = s32[] constant(0)
  ROOT loop = s32[] while(zero), condition=cond, body=body
}
)";

// Parses `text`; aborts the test binary on a syntax error (a bug in the
// test, never input from outside).
xla::HloModuleProto ParseProgram(absl::string_view text);

}  // namespace tpu::e2e

#endif  // SOFTWARE_TPU_TESTS_E2E_PROGRAMS_H_
