// Tokens, send/recv within one program, infeed/outfeed, asynchronous
// wrappers, copy-start/done, custom-calls by target, the structural odds and
// ends (domain, tuple-select, dimension sizes) and the rejection of dynamic
// shapes.

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::CompileHlo;
using testing::RunHlo;
using testing::Scalar;
using testing::Values;
using testing::Vec;

Literal Token() { return Literal::Zeros(Shape::Token()); }

// Expects `status` to have `code` and mention every one of `parts`.
void ExpectError(const absl::Status& status, absl::StatusCode code,
                 std::vector<std::string> parts) {
  EXPECT_EQ(status.code(), code) << status;
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos)
        << "missing \"" << part << "\" in " << status;
  }
}

TEST(TokenTest, AfterAllAddDependencyAndTokenParametersAndResults) {
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  t = token[] parameter(0)
  x = f32[2] parameter(1)
  a = token[] after-all(t)
  b = token[] after-all()
  c = token[] after-all(a, b)
  y = f32[2] add-dependency(x, c)
  ROOT r = (f32[2], token[]) tuple(y, c)
})",
      {Token(), Vec<float>(xla::F32, {2}, {1.5f, -3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(out->element(0)), (std::vector<float>{1.5f, -3}));
  EXPECT_TRUE(out->element(1).shape().IsToken());
}

TEST(ChannelTest, SendAndRecvWithinOneProgramRunInDataOrder) {
  // recv-done comes before send in the text; it still receives x.
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  x = f32[3] parameter(0)
  tok = token[] after-all()
  recv = (f32[3], u32[], token[]) recv(tok), channel_id=7
  recv-done = (f32[3], token[]) recv-done(recv), channel_id=7
  data = f32[3] get-tuple-element(recv-done), index=0
  send = (f32[3], u32[], token[]) send(x, tok), channel_id=7
  send-done = token[] send-done(send), channel_id=7
  ROOT r = f32[3] add(data, data)
})",
      {Vec<float>(xla::F32, {3}, {1, 2, -4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{2, 4, -8}));
}

TEST(ChannelTest, HostTransfersAndUnpairedRecvsSayWhy) {
  absl::StatusOr<std::unique_ptr<Executable>> host = CompileHlo(R"(
ENTRY e {
  x = f32[3] parameter(0)
  tok = token[] after-all()
  send = (f32[3], u32[], token[]) send(x, tok), channel_id=3, is_host_transfer=true
  ROOT done = token[] send-done(send), channel_id=3, is_host_transfer=true
})");
  ASSERT_FALSE(host.ok());
  ExpectError(host.status(), absl::StatusCode::kUnimplemented,
              {"channel 3", "host transfer"});
  absl::StatusOr<Literal> lonely = RunHlo(R"(
ENTRY e {
  tok = token[] after-all()
  recv = (f32[3], u32[], token[]) recv(tok), channel_id=9
  done = (f32[3], token[]) recv-done(recv), channel_id=9
  ROOT data = f32[3] get-tuple-element(done), index=0
})",
                                          {});
  ASSERT_FALSE(lonely.ok());
  ExpectError(lonely.status(), absl::StatusCode::kUnimplemented, {"channel 9"});
}

TEST(ChannelTest, InfeedAndOutfeedNameTheInstruction) {
  absl::StatusOr<std::unique_ptr<Executable>> infeed = CompileHlo(R"(
ENTRY e {
  tok = token[] after-all()
  in = (f32[2], token[]) infeed(tok)
  ROOT x = f32[2] get-tuple-element(in), index=0
})");
  ASSERT_FALSE(infeed.ok());
  ExpectError(infeed.status(), absl::StatusCode::kUnimplemented,
              {"infeed", "instruction in"});
  absl::StatusOr<std::unique_ptr<Executable>> outfeed = CompileHlo(R"(
ENTRY e {
  x = f32[2] parameter(0)
  tok = token[] after-all()
  ROOT out = token[] outfeed(x, tok), outfeed_shape=f32[2]
})");
  ASSERT_FALSE(outfeed.ok());
  ExpectError(outfeed.status(), absl::StatusCode::kUnimplemented,
              {"outfeed", "instruction out"});
}

TEST(AsyncTest, WrappedComputationsAndCopiesRunSynchronously) {
  absl::StatusOr<Literal> out = RunHlo(
      R"(
wrapped {
  p = f32[2] parameter(0)
  q = f32[2] parameter(1)
  ROOT s = f32[2] subtract(p, q)
}
ENTRY e {
  x = f32[2] parameter(0)
  y = f32[2] parameter(1)
  start = ((f32[2], f32[2]), f32[2], s32[]) async-start(x, y), calls=wrapped
  update = ((f32[2], f32[2]), f32[2], s32[]) async-update(start)
  d = f32[2] async-done(update)
  cs = (f32[2], f32[2], u32[]) copy-start(d)
  ROOT cd = f32[2] copy-done(cs)
})",
      {Vec<float>(xla::F32, {2}, {5, 1}), Vec<float>(xla::F32, {2}, {2, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{3, -3}));
}

TEST(CustomCallTest, AnnotationsPassTheirOperandThrough) {
  for (const char* target :
       {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
        "annotate_device_placement", "MoveToHost", "MoveToDevice"}) {
    absl::StatusOr<Literal> out = RunHlo(
        absl::StrCat("ENTRY e {\n  x = s32[3] parameter(0)\n  ROOT c = s32[3] "
                     "custom-call(x), custom_call_target=\"",
                     target, "\"\n}\n"),
        {Vec<int32_t>(xla::S32, {3}, {4, -5, 6})});
    ASSERT_TRUE(out.ok()) << target << ": " << out.status();
    EXPECT_EQ(Values<int32_t>(*out), (std::vector<int32_t>{4, -5, 6}));
  }
  absl::StatusOr<std::unique_ptr<Executable>> reshard = CompileHlo(R"(
ENTRY e {
  x = f32[8] parameter(0)
  ROOT c = f32[4] custom-call(x), custom_call_target="SPMDFullToShardShape"
})");
  ASSERT_FALSE(reshard.ok());
  ExpectError(reshard.status(), absl::StatusCode::kUnimplemented,
              {"SPMDFullToShardShape", "partitioning"});
}

TEST(CustomCallTest, PallasKernelsAndUnknownTargetsAreNamed) {
  absl::StatusOr<std::unique_ptr<Executable>> pallas = CompileHlo(R"(
ENTRY e {
  x = f32[8] parameter(0)
  ROOT c = f32[8] custom-call(x), custom_call_target="tpu_custom_call", metadata={op_name="jit(my_add)/pallas_call"}, backend_config={"custom_call_config": {"body": "TUzv"}}
})");
  ASSERT_FALSE(pallas.ok());
  ExpectError(pallas.status(), absl::StatusCode::kUnimplemented,
              {"jit(my_add)/pallas_call",
               "Pallas/Mosaic kernel cannot run on "
               "the emulator"});
  absl::StatusOr<std::unique_ptr<Executable>> unknown = CompileHlo(R"(
ENTRY e {
  x = f32[8] parameter(0)
  ROOT c = f32[8] custom-call(x), custom_call_target="my_library_kernel"
})");
  ASSERT_FALSE(unknown.ok());
  ExpectError(unknown.status(), absl::StatusCode::kUnimplemented,
              {"\"my_library_kernel\""});
}

TEST(CustomCallTest, QrAndHouseholderProductMatchHandComputedReflectors) {
  // A = [[3, 1], [4, 2], [0, 5]]: column 0 has norm 5 and alpha = 3 >= 0, so
  // beta = -5, tau = (beta - alpha) / beta = 1.6, v = (1, 4 / (3 + 5), 0).
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  a = f64[3,2] parameter(0)
  qr = (f64[3,2], f64[2]) custom-call(a), custom_call_target="Qr"
  r = f64[3,2] get-tuple-element(qr), index=0
  taus = f64[2] get-tuple-element(qr), index=1
  q = f64[3,2] custom-call(r, taus), custom_call_target="ProductOfElementaryHouseholderReflectors"
  ROOT t = (f64[3,2], f64[2], f64[3,2]) tuple(r, taus, q)
})",
      {Vec<double>(xla::F64, {3, 2}, {3, 1, 4, 2, 0, 5})});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> r = Values<double>(out->element(0));
  const std::vector<double> taus = Values<double>(out->element(1));
  const std::vector<double> q = Values<double>(out->element(2));
  EXPECT_DOUBLE_EQ(r[0], -5);
  EXPECT_DOUBLE_EQ(r[2], 0.5);  // v[1] below the diagonal
  EXPECT_DOUBLE_EQ(r[4], 0);
  EXPECT_DOUBLE_EQ(taus[0], 1.6);
  // Q R reproduces A and Q has orthonormal columns.
  const double a[6] = {3, 1, 4, 2, 0, 5};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      double sum = 0;
      for (int k = 0; k <= j; ++k) sum += q[i * 2 + k] * r[k * 2 + j];
      EXPECT_NEAR(sum, a[i * 2 + j], 1e-12) << i << "," << j;
    }
  }
  for (int c = 0; c < 2; ++c) {
    for (int d = 0; d < 2; ++d) {
      double dot = 0;
      for (int i = 0; i < 3; ++i) dot += q[i * 2 + c] * q[i * 2 + d];
      EXPECT_NEAR(dot, c == d ? 1.0 : 0.0, 1e-12);
    }
  }
}

TEST(StructuralTest, DomainTupleSelectAndDimensionSizes) {
  absl::StatusOr<Literal> out = RunHlo(
      R"(
ENTRY e {
  p = pred[] parameter(0)
  x = f32[2,3] parameter(1)
  d = f32[2,3] domain(x), domain={kind="sharding", entry={maximal device=0}, exit={replicated}}
  one = s32[] constant(1)
  two = s32[] constant(2)
  a = (f32[2,3], s32[]) tuple(d, one)
  b = (f32[2,3], s32[]) tuple(x, two)
  sel = (f32[2,3], s32[]) tuple-select(p, a, b)
  n = s32[] get-dimension-size(x), dimensions={1}
  same = f32[2,3] set-dimension-size(x, n), dimensions={1}
  ROOT t = ((f32[2,3], s32[]), s32[], f32[2,3]) tuple(sel, n, same)
})",
      {Scalar<bool>(xla::PRED, false),
       Vec<float>(xla::F32, {2, 3}, {1, 2, 3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>(out->element(0).element(1)),
            (std::vector<int32_t>{2}));
  EXPECT_EQ(Values<int32_t>(out->element(1)), (std::vector<int32_t>{3}));
  EXPECT_EQ(Values<float>(out->element(2)),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(DynamicShapeTest, BoundedAndUnboundedDimensionsAreRejectedClearly) {
  for (const char* shape : {"f32[<=4]", "f32[?]"}) {
    absl::StatusOr<std::unique_ptr<Executable>> exe = CompileHlo(
        absl::StrCat("ENTRY e {\n  ROOT x = ", shape, " parameter(0)\n}\n"));
    ASSERT_FALSE(exe.ok()) << shape;
    ExpectError(exe.status(), absl::StatusCode::kUnimplemented,
                {"dynamic dimensions are not supported"});
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter
