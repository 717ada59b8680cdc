// rng-bit-generator against Random123's published known-answer vectors
// (Threefry-2x32-20 and Philox-4x32-10, placed in the state the way XLA's
// expander reads it) and against values XLA's CPU backend prints for a
// three_fry u32[3,2]; rng determinism and distribution checks; the program's
// random state across executions, threads and loop iterations.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "emulator/interpreter/executable.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace tpu::emulator::interpreter {
namespace {

using testing::ComputationBuilder;
using testing::HloModuleBuilder;
using testing::RunModule;
using testing::S;
using testing::Scalar;
using testing::Values;
using testing::Vec;

absl::StatusOr<Literal> RunBitGen(std::vector<uint64_t> state,
                                  xla::RandomAlgorithm algorithm,
                                  const Shape& data) {
  HloModuleBuilder m("rbg");
  ComputationBuilder& e = m.Entry();
  const Shape state_shape = S(xla::U64, {static_cast<int64_t>(state.size())});
  int64_t p = e.Param(state_shape);
  e.Op("rng-bit-generator", Shape::Tuple({state_shape, data}), {p},
       [&](xla::HloInstructionProto& i) { i.set_rng_algorithm(algorithm); });
  return RunModule(
      m.Build(),
      {Vec<uint64_t>(xla::U64, {static_cast<int64_t>(state.size())}, state)});
}

uint64_t Join(uint32_t lo, uint32_t hi) {
  return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32);
}

TEST(RngBitGeneratorTest, ThreeFryKnownAnswers) {
  struct Kat {
    uint32_t counter[2], key[2], out[2];
  };
  // Random123 kat_vectors, threefry2x32_20.
  const Kat kats[] = {
      {{0, 0}, {0, 0}, {0x6b200159, 0x99ba4efe}},
      {{0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x1cb996fc, 0xbb002be7}},
      {{0x243f6a88, 0x85a308d3},
       {0x13198a2e, 0x03707344},
       {0xc4923a9c, 0x483df7a0}},
  };
  for (const Kat& k : kats) {
    const uint64_t key = Join(k.key[0], k.key[1]);
    const uint64_t counter = Join(k.counter[0], k.counter[1]);
    absl::StatusOr<Literal> out =
        RunBitGen({key, counter}, xla::RNG_THREE_FRY, S(xla::U64, {1}));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<uint64_t>(out->element(1))[0], Join(k.out[0], k.out[1]));
    EXPECT_EQ(Values<uint64_t>(out->element(0)),
              (std::vector<uint64_t>{key, counter + 1}));
  }
}

TEST(RngBitGeneratorTest, ThreeFryU32LayoutMatchesXlaCpu) {
  // XLA CPU: state [0, 0], u32[3,2] -> new state [0, 3] and rows
  // 1.7973e9 2.5791e9 / 1.3515e9 3.2358e9 / 1.6886e9 4.2293e9 (printed to 5
  // digits by r-xla/anvil's documentation). Row i is block i: the split
  // dimension is dim 1 (the first even one).
  absl::StatusOr<Literal> out =
      RunBitGen({0, 0}, xla::RNG_THREE_FRY, S(xla::U32, {3, 2}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<uint64_t>(out->element(0)), (std::vector<uint64_t>{0, 3}));
  const std::vector<uint32_t> v = Values<uint32_t>(out->element(1));
  EXPECT_EQ(v[0], 0x6b200159u);
  EXPECT_EQ(v[1], 0x99ba4efeu);
  const double approx[6] = {1.7973e9, 2.5791e9, 1.3515e9,
                            3.2358e9, 1.6886e9, 4.2293e9};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(v[i], approx[i], 0.00051e9) << i;
}

TEST(RngBitGeneratorTest, ThreeFryOddShapesAndNarrowTypes) {
  // u32[3]: no even dim -> split the largest (3) into 2 blocks: [b0.w0,
  // b0.w1, b1.w0].
  absl::StatusOr<Literal> odd =
      RunBitGen({0, 0}, xla::RNG_THREE_FRY, S(xla::U32, {3}));
  ASSERT_TRUE(odd.ok()) << odd.status();
  const std::vector<uint32_t> w = Values<uint32_t>(odd->element(1));
  absl::StatusOr<Literal> pair =
      RunBitGen({0, 0}, xla::RNG_THREE_FRY, S(xla::U32, {2, 2}));
  ASSERT_TRUE(pair.ok()) << pair.status();
  // u32[2,2] splits dim 0: blocks are columns... [0][c] = block c word 0,
  // [1][c] = block c word 1.
  const std::vector<uint32_t> p = Values<uint32_t>(pair->element(1));
  EXPECT_EQ(w[0], 0x6b200159u);
  EXPECT_EQ(w[1], 0x99ba4efeu);
  EXPECT_EQ(p[0], 0x6b200159u);
  EXPECT_EQ(p[2], 0x99ba4efeu);
  EXPECT_EQ(w[2], p[1]);  // block 1 word 0
  EXPECT_EQ(Values<uint64_t>(odd->element(0))[1], 2u);
  EXPECT_EQ(Values<uint64_t>(pair->element(0))[1], 2u);
  // Scalar: one block, word 0.
  absl::StatusOr<Literal> scalar =
      RunBitGen({0, 0}, xla::RNG_THREE_FRY, S(xla::U32, {}));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(Values<uint32_t>(scalar->element(1))[0], 0x6b200159u);
  // u16 truncates the u32 words.
  absl::StatusOr<Literal> narrow =
      RunBitGen({0, 0}, xla::RNG_THREE_FRY, S(xla::U16, {2}));
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(Values<uint16_t>(narrow->element(1)),
            (std::vector<uint16_t>{0x0159, 0x4efe}));
}

TEST(RngBitGeneratorTest, PhiloxKnownAnswers) {
  struct Kat {
    uint32_t counter[4], key[2], out[4];
  };
  // Random123 kat_vectors, philox4x32_10.
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const uint64_t key = Join(k.key[0], k.key[1]);
    const uint64_t lo = Join(k.counter[0], k.counter[1]);
    const uint64_t hi = Join(k.counter[2], k.counter[3]);
    // u64[3] state: [key, counter lo, counter hi].
    absl::StatusOr<Literal> out =
        RunBitGen({key, lo, hi}, xla::RNG_PHILOX, S(xla::U32, {4}));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<uint32_t>(out->element(1)),
              (std::vector<uint32_t>{k.out[0], k.out[1], k.out[2], k.out[3]}));
    const uint64_t next_lo = lo + 1;
    const uint64_t next_hi = next_lo == 0 ? hi + 1 : hi;
    EXPECT_EQ(Values<uint64_t>(out->element(0)),
              (std::vector<uint64_t>{key, next_lo, next_hi}));
  }
}

TEST(RngBitGeneratorTest, PhiloxTwoWordStateAndDefault) {
  // u64[2] state [key, lo]: XLA reverses it, so the counter's high word is
  // the key. With all-ones this is the second KAT; the new state keeps only
  // the low word (wrapped to 0).
  const uint64_t ones = ~uint64_t{0};
  for (xla::RandomAlgorithm alg : {xla::RNG_PHILOX, xla::RNG_DEFAULT}) {
    absl::StatusOr<Literal> out =
        RunBitGen({ones, ones}, alg, S(xla::U64, {2}));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<uint64_t>(out->element(1)),
              (std::vector<uint64_t>{Join(0x408f276d, 0x41c83b0e),
                                     Join(0xa20bc7c6, 0x6d5451fd)}));
    EXPECT_EQ(Values<uint64_t>(out->element(0)),
              (std::vector<uint64_t>{ones, 0}));
  }
  // Zero state, 6 u8 values: block 0's words truncated, then block 1.
  absl::StatusOr<Literal> bytes =
      RunBitGen({0, 0}, xla::RNG_PHILOX, S(xla::U8, {6}));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const std::vector<uint8_t> b = Values<uint8_t>(bytes->element(1));
  EXPECT_EQ(std::vector<uint8_t>(b.begin(), b.begin() + 4),
            (std::vector<uint8_t>{0xd5, 0x8d, 0x4c, 0xd8}));
  EXPECT_EQ(Values<uint64_t>(bytes->element(0)), (std::vector<uint64_t>{0, 2}));
}

TEST(RngBitGeneratorTest, ChainedCallsAdvanceTheCounter) {
  // Generating 8 u32 at once equals two calls of 4 with the state threaded.
  absl::StatusOr<Literal> all =
      RunBitGen({7, 100, 0}, xla::RNG_PHILOX, S(xla::U32, {8}));
  ASSERT_TRUE(all.ok()) << all.status();
  absl::StatusOr<Literal> first =
      RunBitGen({7, 100, 0}, xla::RNG_PHILOX, S(xla::U32, {4}));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<Literal> second = RunBitGen(
      Values<uint64_t>(first->element(0)), xla::RNG_PHILOX, S(xla::U32, {4}));
  ASSERT_TRUE(second.ok()) << second.status();
  std::vector<uint32_t> joined = Values<uint32_t>(first->element(1));
  for (uint32_t v : Values<uint32_t>(second->element(1))) joined.push_back(v);
  EXPECT_EQ(Values<uint32_t>(all->element(1)), joined);
}

TEST(RngBitGeneratorTest, Rejections) {
  HloModuleBuilder m("bad");
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(S(xla::U32, {4}));
  e.Op("rng-bit-generator", Shape::Tuple({S(xla::U32, {4}), S(xla::U32, {2})}),
       {p}, [](xla::HloInstructionProto& i) {
         i.set_rng_algorithm(xla::RNG_THREE_FRY);
       });
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(m.Build(), CompileOptions());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(exe.status().message().find("u64[n]"), std::string::npos)
      << exe.status();
  absl::StatusOr<Literal> one =
      RunBitGen({0}, xla::RNG_THREE_FRY, S(xla::U32, {2}));
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RngBitGeneratorTest, LongerStatesPassTheirExtraWordsThrough) {
  // XLA's verifier accepts any u64 state; the algorithm reads its words
  // and the rest come back unchanged.
  absl::StatusOr<Literal> short_fry =
      RunBitGen({9, 10}, xla::RNG_THREE_FRY, S(xla::U32, {6}));
  absl::StatusOr<Literal> long_fry =
      RunBitGen({9, 10, 11, 12}, xla::RNG_THREE_FRY, S(xla::U32, {6}));
  ASSERT_TRUE(short_fry.ok()) << short_fry.status();
  ASSERT_TRUE(long_fry.ok()) << long_fry.status();
  EXPECT_EQ(Values<uint32_t>(long_fry->element(1)),
            Values<uint32_t>(short_fry->element(1)));
  EXPECT_EQ(Values<uint64_t>(long_fry->element(0)),
            (std::vector<uint64_t>{9, 13, 11, 12}));
  absl::StatusOr<Literal> short_philox =
      RunBitGen({5, 6, 7}, xla::RNG_PHILOX, S(xla::U64, {3}));
  absl::StatusOr<Literal> long_philox =
      RunBitGen({5, 6, 7, 8, 9, 10}, xla::RNG_PHILOX, S(xla::U64, {3}));
  ASSERT_TRUE(short_philox.ok()) << short_philox.status();
  ASSERT_TRUE(long_philox.ok()) << long_philox.status();
  EXPECT_EQ(Values<uint64_t>(long_philox->element(1)),
            Values<uint64_t>(short_philox->element(1)));
  // Three u64 values take two Philox blocks.
  EXPECT_EQ(Values<uint64_t>(long_philox->element(0)),
            (std::vector<uint64_t>{5, 8, 7, 8, 9, 10}));
}

// ---------------------------------------------------------------------------

xla::HloModuleProto RngModule(xla::PrimitiveType t, int64_t n,
                              xla::RandomDistribution dist, int copies) {
  HloModuleBuilder m("rng");
  ComputationBuilder& e = m.Entry();
  int64_t a = e.Param(S(t, {}));
  int64_t b = e.Param(S(t, {}));
  std::vector<int64_t> outs;
  for (int i = 0; i < copies; ++i) {
    outs.push_back(e.Op(
        "rng", S(t, {n}), {a, b},
        [&](xla::HloInstructionProto& inst) { inst.set_distribution(dist); }));
  }
  e.Tuple(outs);
  return m.Build();
}

TEST(RngTest, UniformF32InRangeDeterministicAndPerInstruction) {
  const xla::HloModuleProto module =
      RngModule(xla::F32, 10000, xla::RNG_UNIFORM, 2);
  auto run = [&] {
    return RunModule(module,
                     {Scalar<float>(xla::F32, -2), Scalar<float>(xla::F32, 3)});
  };
  absl::StatusOr<Literal> a = run();
  absl::StatusOr<Literal> b = run();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);  // same module, same values
  const std::vector<float> x = Values<float>(a->element(0));
  EXPECT_NE(x, Values<float>(a->element(1)));  // two instructions differ
  double sum = 0;
  for (float v : x) {
    ASSERT_GE(v, -2.0f);
    ASSERT_LT(v, 3.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / x.size(), 0.5, 0.05);
}

TEST(RngTest, NormalF64MomentsAndBf16) {
  absl::StatusOr<Literal> out =
      RunModule(RngModule(xla::F64, 20000, xla::RNG_NORMAL, 1),
                {Scalar<double>(xla::F64, 1.0), Scalar<double>(xla::F64, 2.0)});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<double> x = Values<double>(out->element(0));
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  EXPECT_NEAR(mean, 1.0, 0.05);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.05);
  using bf16 = Eigen::bfloat16;
  absl::StatusOr<Literal> h = RunModule(
      RngModule(xla::BF16, 100, xla::RNG_UNIFORM, 1),
      {Scalar<bf16>(xla::BF16, bf16(0)), Scalar<bf16>(xla::BF16, bf16(1))});
  ASSERT_TRUE(h.ok()) << h.status();
  for (float v : testing::FloatValues(h->element(0))) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 1.0f);
  }
}

TEST(RngTest, UniformIntegers) {
  absl::StatusOr<Literal> out =
      RunModule(RngModule(xla::S32, 5000, xla::RNG_UNIFORM, 1),
                {Scalar<int32_t>(xla::S32, -3), Scalar<int32_t>(xla::S32, 4)});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<int> hist(7, 0);
  for (int32_t v : Values<int32_t>(out->element(0))) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    ++hist[v + 3];
  }
  for (int c : hist) EXPECT_GT(c, 600);  // ~714 each
  absl::StatusOr<Literal> wide = RunModule(
      RngModule(xla::U64, 100, xla::RNG_UNIFORM, 1),
      {Scalar<uint64_t>(xla::U64, 10), Scalar<uint64_t>(xla::U64, 12)});
  ASSERT_TRUE(wide.ok()) << wide.status();
  for (uint64_t v : Values<uint64_t>(wide->element(0))) {
    EXPECT_TRUE(v == 10 || v == 11) << v;
  }
  // Normal integers do not exist.
  absl::StatusOr<std::unique_ptr<Executable>> bad = Executable::Compile(
      RngModule(xla::S32, 4, xla::RNG_NORMAL, 1), CompileOptions());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
}

// ---------------------------------------------------------------------------
// The program's random state (rng_state.h): XLA's initial value, advanced per
// execution, replayed by a fresh compile.

constexpr uint64_t kXlaInitialRngState = 0x7012395;

std::unique_ptr<Executable> Compile(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = testing::CompileHlo(text);
  EXPECT_TRUE(exe.ok()) << exe.status();
  return exe.ok() ? *std::move(exe) : nullptr;
}

Literal Execute(const Executable& exe, std::vector<Literal> args = {}) {
  absl::StatusOr<Literal> out =
      exe.Execute(std::move(args), ExecutionContext(), nullptr);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : Literal();
}

TEST(RngStateTest, GetAndUpdateStateStartsAtXlasValueAndAdvances) {
  std::unique_ptr<Executable> exe = Compile(R"(
ENTRY e {
  ROOT s = u64[2] rng-get-and-update-state(), delta=5
})");
  ASSERT_NE(exe, nullptr);
  for (uint64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(Values<uint64_t>(Execute(*exe)),
              (std::vector<uint64_t>{kXlaInitialRngState + 5 * k, 0}));
  }
  // The 128-bit state carries into its high word (delta -1 is 2^64 - 1,
  // zero-extended as XLA does).
  std::unique_ptr<Executable> carry = Compile(R"(
ENTRY e {
  ROOT s = u64[2] rng-get-and-update-state(), delta=-1
})");
  ASSERT_NE(carry, nullptr);
  Execute(*carry);
  EXPECT_EQ(Values<uint64_t>(Execute(*carry)),
            (std::vector<uint64_t>{kXlaInitialRngState - 1, 1}));
}

TEST(RngStateTest, ConcurrentExecutionsDrawDisjointStates) {
  std::unique_ptr<Executable> exe = Compile(R"(
ENTRY e {
  ROOT s = u64[2] rng-get-and-update-state(), delta=3
})");
  ASSERT_NE(exe, nullptr);
  constexpr int kThreads = 8, kRuns = 25;
  std::vector<std::vector<uint64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        seen[t].push_back(Values<uint64_t>(Execute(*exe))[0]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<uint64_t> all;
  for (const auto& v : seen) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  for (int k = 0; k < kThreads * kRuns; ++k) {
    ASSERT_EQ(all[k], kXlaInitialRngState + 3 * k) << k;
  }
}

// The key of an rng instruction (kernels_rng.cc): SplitMix64's finalizer of
// its id.
uint64_t RngKey(int64_t id) {
  uint64_t z = static_cast<uint64_t>(id) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t RngInstructionId(const xla::HloModuleProto& module) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c.instructions()) {
      if (i.opcode() == "rng") return i.id();
    }
  }
  return -1;
}

TEST(RngStateTest, RngDrawsXlasUniformFromTheAdvancingState) {
  const xla::HloModuleProto module =
      RngModule(xla::F32, 6, xla::RNG_UNIFORM, 1);
  const uint64_t key = RngKey(RngInstructionId(module));
  absl::StatusOr<std::unique_ptr<Executable>> exe =
      Executable::Compile(module, CompileOptions());
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto args = [] {
    std::vector<Literal> v;
    v.push_back(Scalar<float>(xla::F32, -2));
    v.push_back(Scalar<float>(xla::F32, 3));
    return v;
  };
  for (uint64_t run = 0; run < 2; ++run) {
    // Reference bits: rng-bit-generator(philox) with state {key, counter},
    // the counter advancing by 6 words per execution.
    absl::StatusOr<Literal> bits =
        RunBitGen({key, kXlaInitialRngState + 6 * run, 0}, xla::RNG_PHILOX,
                  S(xla::U32, {6}));
    ASSERT_TRUE(bits.ok()) << bits.status();
    const std::vector<uint32_t> b = Values<uint32_t>(bits->element(1));
    const std::vector<float> got =
        Values<float>(Execute(**exe, args()).element(0));
    for (int i = 0; i < 6; ++i) {
      const float u = std::ldexp(static_cast<float>(b[i] >> 9), -23);
      EXPECT_EQ(got[i], u * 5.0f + -2.0f) << "run " << run << " element " << i;
    }
  }
  // A second compile of the same program replays the first draw.
  absl::StatusOr<std::unique_ptr<Executable>> again =
      Executable::Compile(module, CompileOptions());
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::unique_ptr<Executable>> first =
      Executable::Compile(module, CompileOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Execute(**again, args()), Execute(**first, args()));
}

TEST(RngStateTest, LoopIterationsDrawNewNumbers) {
  std::unique_ptr<Executable> exe = Compile(R"(
cond {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  two = s32[] constant(2)
  ROOT lt = pred[] compare(i, two), direction=LT
}
body {
  p = (s32[], f32[3], f32[3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  a = f32[] constant(0)
  b = f32[] constant(1)
  r = f32[3] rng(a, b), distribution=rng_uniform
  prev = f32[3] get-tuple-element(p), index=2
  ROOT t = (s32[], f32[3], f32[3]) tuple(next, prev, r)
}
ENTRY e {
  z = s32[] constant(0)
  zeros = f32[3] constant({0, 0, 0})
  init = (s32[], f32[3], f32[3]) tuple(z, zeros, zeros)
  ROOT w = (s32[], f32[3], f32[3]) while(init), condition=cond, body=body
})");
  ASSERT_NE(exe, nullptr);
  Literal out = Execute(*exe);
  EXPECT_NE(Values<float>(out.element(1)), Values<float>(out.element(2)));
}

}  // namespace
}  // namespace tpu::emulator::interpreter
