// Every elementwise operation on every element type XLA allows it for, as HLO
// text: operands are constants of the type, the result is converted to f64
// inside the program (real() first for complex), and the values are checked
// against hand-computed ones. Catches a (operation, type) pair that is not
// registered, rejected at compile time or computed in the wrong type.

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "emulator/interpreter/test_util.h"
#include "gtest/gtest.h"

namespace tpu::emulator::interpreter {
namespace {

using testing::RunHlo;
using testing::Values;

enum Kind { kSigned, kUnsigned, kHalf, kFloat, kComplex, kPred };

struct TypeCase {
  const char* name;
  Kind kind;
};

const std::vector<TypeCase>& AllTypes() {
  static const auto* types = new std::vector<TypeCase>{
      {"s8", kSigned},    {"s16", kSigned},   {"s32", kSigned},
      {"s64", kSigned},   {"u8", kUnsigned},  {"u16", kUnsigned},
      {"u32", kUnsigned}, {"u64", kUnsigned}, {"f16", kHalf},
      {"bf16", kHalf},    {"f32", kFloat},    {"f64", kFloat},
      {"c64", kComplex},  {"c128", kComplex}, {"pred", kPred}};
  return *types;
}

bool IsInteger(Kind k) { return k == kSigned || k == kUnsigned; }
bool IsFloat(Kind k) { return k == kHalf || k == kFloat; }

// A constant literal of `values` in HLO text for type `t`.
std::string Constant(const TypeCase& t, const std::vector<double>& values) {
  std::vector<std::string> items;
  for (double v : values) {
    if (t.kind == kPred) {
      items.push_back(v != 0 ? "true" : "false");
    } else if (t.kind == kComplex) {
      items.push_back(absl::StrCat("(", v, ", 0)"));
    } else {
      items.push_back(absl::StrCat(v));
    }
  }
  return absl::StrCat("{", absl::StrJoin(items, ", "), "}");
}

// Runs `op` on constants a (and b) of type t; the result type is `result`
// (t when empty). Returns the elements as f64.
std::vector<double> RunOp(const TypeCase& t, const std::string& op,
                          const std::vector<double>& a,
                          const std::vector<double>& b, std::string result = "",
                          std::string attrs = "") {
  const std::string n = absl::StrCat(a.size());
  if (result.empty()) result = t.name;
  const bool complex_result = result == "c64" || result == "c128";
  std::string text = absl::StrCat("HloModule sweep\nENTRY e {\n  a = ", t.name,
                                  "[", n, "] constant(", Constant(t, a), ")\n");
  std::string operands = "a";
  if (!b.empty()) {
    absl::StrAppend(&text, "  b = ", t.name, "[", n, "] constant(",
                    Constant(t, b), ")\n");
    operands = "a, b";
  }
  absl::StrAppend(&text, "  r = ", result, "[", n, "] ", op, "(", operands, ")",
                  attrs, "\n");
  if (complex_result) {
    const char* real = result == "c64" ? "f32" : "f64";
    absl::StrAppend(&text, "  re = ", real, "[", n, "] real(r)\n",
                    "  ROOT out = f64[", n, "] convert(re)\n}\n");
  } else {
    absl::StrAppend(&text, "  ROOT out = f64[", n, "] convert(r)\n}\n");
  }
  absl::StatusOr<Literal> out = RunHlo(text, {});
  EXPECT_TRUE(out.ok()) << out.status() << "\n" << text;
  if (!out.ok()) return {};
  return Values<double>(*out);
}

void ExpectValues(const std::vector<double>& got,
                  const std::vector<double>& want, const TypeCase& t,
                  const std::string& op) {
  ASSERT_EQ(got.size(), want.size()) << op << " on " << t.name;
  // Half floats hold 8 (bf16) or 11 (f16) significant bits.
  const double rel = t.kind == kHalf                          ? 1e-2
                     : t.kind == kFloat || t.kind == kComplex ? 1e-6
                                                              : 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::abs(want[i]))
        << op << " on " << t.name << " element " << i;
  }
}

const std::vector<double> kA = {7, 9, 12, 20};
const std::vector<double> kB = {2, 4, 5, 3};

TEST(TypeSweepTest, ArithmeticOnEveryNumericType) {
  for (const TypeCase& t : AllTypes()) {
    if (t.kind == kPred) continue;
    ExpectValues(RunOp(t, "add", kA, kB), {9, 13, 17, 23}, t, "add");
    ExpectValues(RunOp(t, "subtract", kA, kB), {5, 5, 7, 17}, t, "subtract");
    ExpectValues(RunOp(t, "multiply", kA, kB), {14, 36, 60, 60}, t, "multiply");
    ExpectValues(RunOp(t, "divide", kA, kB),
                 IsInteger(t.kind)
                     ? std::vector<double>{3, 2, 2, 6}
                     : std::vector<double>{3.5, 2.25, 2.4, 20.0 / 3},
                 t, "divide");
    if (t.kind == kComplex) {
      // XLA defines no order, remainder or rounding on complex numbers.
      ExpectValues(RunOp(t, "negate", kA, {}), {-7, -9, -12, -20}, t, "negate");
      continue;
    }
    ExpectValues(RunOp(t, "remainder", kA, kB), {1, 1, 2, 2}, t, "remainder");
    ExpectValues(RunOp(t, "maximum", kA, kB), kA, t, "maximum");
    ExpectValues(RunOp(t, "minimum", kA, kB), kB, t, "minimum");
    ExpectValues(RunOp(t, "abs", kA, {}), kA, t, "abs");
    ExpectValues(RunOp(t, "sign", kA, {}), {1, 1, 1, 1}, t, "sign");
    if (t.kind != kUnsigned) {
      ExpectValues(RunOp(t, "negate", kA, {}), {-7, -9, -12, -20}, t, "negate");
    }
  }
}

TEST(TypeSweepTest, CompareOnEveryType) {
  const std::vector<std::pair<std::string, std::vector<double>>> directions = {
      {"EQ", {1, 0, 0, 1}}, {"NE", {0, 1, 1, 0}}, {"LT", {0, 1, 0, 0}},
      {"LE", {1, 1, 0, 1}}, {"GT", {0, 0, 1, 0}}, {"GE", {1, 0, 1, 1}}};
  for (const TypeCase& t : AllTypes()) {
    for (const auto& [direction, want] : directions) {
      // Complex numbers are only equal or not.
      if (t.kind == kComplex && direction != "EQ" && direction != "NE") {
        continue;
      }
      ExpectValues(RunOp(t, "compare", {1, 0, 1, 0}, {1, 1, 0, 0}, "pred",
                         absl::StrCat(", direction=", direction)),
                   want, t, "compare " + direction);
    }
  }
}

TEST(TypeSweepTest, SelectOnEveryType) {
  for (const TypeCase& t : AllTypes()) {
    const std::string text = absl::StrCat(
        "HloModule select\nENTRY e {\n  p = pred[4] constant({true, false, "
        "false, true})\n  a = ",
        t.name, "[4] constant(", Constant(t, {1, 1, 1, 1}), ")\n  b = ", t.name,
        "[4] constant(", Constant(t, {0, 0, 0, 0}), ")\n  s = ", t.name,
        "[4] select(p, a, b)\n  ",
        t.kind == kComplex
            ? absl::StrCat(
                  "re = ", t.name == std::string("c64") ? "f32" : "f64",
                  "[4] real(s)\n  ROOT out = f64[4] convert(re)")
            : "ROOT out = f64[4] convert(s)",
        "\n}\n");
    absl::StatusOr<Literal> out = RunHlo(text, {});
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << text;
    ExpectValues(Values<double>(*out), {1, 0, 0, 1}, t, "select");
  }
}

TEST(TypeSweepTest, BitwiseOnIntegersAndPred) {
  for (const TypeCase& t : AllTypes()) {
    if (t.kind == kPred) {
      const std::vector<double> a = {1, 1, 0, 0};
      const std::vector<double> b = {1, 0, 1, 0};
      ExpectValues(RunOp(t, "and", a, b), {1, 0, 0, 0}, t, "and");
      ExpectValues(RunOp(t, "or", a, b), {1, 1, 1, 0}, t, "or");
      ExpectValues(RunOp(t, "xor", a, b), {0, 1, 1, 0}, t, "xor");
      ExpectValues(RunOp(t, "not", a, {}), {0, 0, 1, 1}, t, "not");
      continue;
    }
    if (!IsInteger(t.kind)) continue;
    const std::vector<double> a = {12, 10, 1, 6}, b = {10, 3, 3, 1};
    ExpectValues(RunOp(t, "and", a, b), {8, 2, 1, 0}, t, "and");
    ExpectValues(RunOp(t, "or", a, b), {14, 11, 3, 7}, t, "or");
    ExpectValues(RunOp(t, "xor", a, b), {6, 9, 2, 7}, t, "xor");
    // Shifting by the bit width or more gives 0 (12 << 10 on 8 bits).
    const int bits = std::stoi(std::string(t.name).substr(1));
    ExpectValues(RunOp(t, "shift-left", a, b),
                 {bits == 8 ? 0.0 : 12288.0, 80, 8, 12}, t, "shift-left");
    ExpectValues(RunOp(t, "shift-right-logical", a, b), {0, 1, 0, 3}, t,
                 "shift-right-logical");
    ExpectValues(RunOp(t, "shift-right-arithmetic", a, b), {0, 1, 0, 3}, t,
                 "shift-right-arithmetic");
    ExpectValues(RunOp(t, "popcnt", a, {}), {2, 2, 1, 2}, t, "popcnt");
    // count-leading-zeros: bit width minus the position of the top bit.
    ExpectValues(RunOp(t, "count-leading-zeros", a, {}),
                 {bits - 4.0, bits - 4.0, bits - 1.0, bits - 3.0}, t, "clz");
  }
}

TEST(TypeSweepTest, FloatFunctionsOnEveryFloatType) {
  const std::vector<double> x = {0.25, 0.5, 1, 2};
  struct Fn {
    const char* op;
    double (*f)(double);
  };
  const std::vector<Fn> fns = {
      {"exponential", [](double v) { return std::exp(v); }},
      {"exponential-minus-one", [](double v) { return std::expm1(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"log-plus-one", [](double v) { return std::log1p(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"rsqrt", [](double v) { return 1 / std::sqrt(v); }},
      {"cbrt", [](double v) { return std::cbrt(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sine", [](double v) { return std::sin(v); }},
      {"cosine", [](double v) { return std::cos(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"logistic", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"round-nearest-afz", [](double v) { return std::round(v); }},
      {"round-nearest-even", [](double v) { return std::nearbyint(v); }},
  };
  for (const TypeCase& t : AllTypes()) {
    if (!IsFloat(t.kind)) continue;
    for (const Fn& fn : fns) {
      std::vector<double> want;
      for (double v : x) want.push_back(fn.f(v));
      ExpectValues(RunOp(t, fn.op, x, {}), want, t, fn.op);
    }
    std::vector<double> want;
    for (double v : x) want.push_back(std::atan2(v, 2.0));
    ExpectValues(RunOp(t, "atan2", x, {2, 2, 2, 2}), want, t, "atan2");
    ExpectValues(RunOp(t, "power", x, {2, 2, 2, 2}), {0.0625, 0.25, 1, 4}, t,
                 "power");
    ExpectValues(RunOp(t, "is-finite", x, {}, "pred"), {1, 1, 1, 1}, t,
                 "is-finite");
  }
}

TEST(TypeSweepTest, ConvertBetweenEveryPairOfRealTypes) {
  // 5 is exact in every type; pred converts to 1.
  for (const TypeCase& from : AllTypes()) {
    if (from.kind == kComplex) continue;
    for (const TypeCase& to : AllTypes()) {
      if (to.kind == kComplex) continue;
      const double v = from.kind == kPred || to.kind == kPred ? 1 : 5;
      ExpectValues(RunOp(from, "convert", {v, 0}, {}, to.name), {v, 0}, to,
                   absl::StrCat("convert from ", from.name));
    }
  }
}

}  // namespace
}  // namespace tpu::emulator::interpreter
