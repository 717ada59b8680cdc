// fft through Executable::Compile/Execute: known DFT values, a naive DFT
// reference for power-of-two and Bluestein lengths, multi-dimensional
// transforms, RFFT/IRFFT and round trips.

#include <cmath>
#include <complex>
#include <cstdint>
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
using testing::Values;
using testing::Vec;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

absl::StatusOr<Literal> RunFft(
    const Literal& x, xla::FftType type, std::vector<int64_t> lengths,
    const Shape& result, const Eigen::ThreadPoolDevice* device = nullptr) {
  HloModuleBuilder m("fft");
  ComputationBuilder& e = m.Entry();
  int64_t p = e.Param(x.shape());
  e.Op("fft", result, {p}, [&](xla::HloInstructionProto& i) {
    i.set_fft_type(type);
    for (int64_t n : lengths) i.add_fft_length(n);
  });
  return RunModule(m.Build(), {x}, {}, device);
}

// Naive multi-dimensional DFT over the last dims of `dims`.
std::vector<c128> NaiveDft(const std::vector<c128>& x,
                           const std::vector<int64_t>& dims, int r,
                           bool inverse) {
  std::vector<c128> data = x;
  const int64_t rank = dims.size();
  for (int64_t axis = rank - r; axis < rank; ++axis) {
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= dims[d];
    const int64_t n = dims[axis];
    const int64_t lines = static_cast<int64_t>(data.size()) / n;
    std::vector<c128> next(data.size());
    for (int64_t l = 0; l < lines; ++l) {
      const int64_t base = (l / inner) * n * inner + l % inner;
      for (int64_t k = 0; k < n; ++k) {
        c128 acc = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double angle =
              (inverse ? 2 : -2) * M_PI * static_cast<double>((j * k) % n) / n;
          acc +=
              data[base + j * inner] * c128(std::cos(angle), std::sin(angle));
        }
        next[base + k * inner] = inverse ? acc / static_cast<double>(n) : acc;
      }
    }
    data = next;
  }
  return data;
}

std::vector<c128> TestSignal(int64_t n, bool complex) {
  std::vector<c128> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = c128(std::sin(0.7 * i) + 0.1 * (i % 5),
                complex ? std::cos(1.3 * i) : 0);
  }
  return v;
}

void ExpectNear(const std::vector<c64>& got, const std::vector<c64>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].real(), want[i].real(), 1e-6) << i;
    EXPECT_NEAR(got[i].imag(), want[i].imag(), 1e-6) << i;
  }
}

TEST(FftTest, KnownDftValues) {
  // DFT of [1 2 3 4] = [10, -2+2i, -2, -2-2i].
  absl::StatusOr<Literal> out =
      RunFft(Vec<c64>(xla::C64, {4}, {c64(1), c64(2), c64(3), c64(4)}),
             xla::FFT, {4}, S(xla::C64, {4}));
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear(Values<c64>(*out),
             {c64(10, 0), c64(-2, 2), c64(-2, 0), c64(-2, -2)});
  // Impulse -> all ones; IFFT of all ones over 3 -> impulse (Bluestein n=3).
  absl::StatusOr<Literal> ones =
      RunFft(Vec<c128>(xla::C128, {3}, {c128(1), c128(1), c128(1)}), xla::IFFT,
             {3}, S(xla::C128, {3}));
  ASSERT_TRUE(ones.ok()) << ones.status();
  std::vector<c128> v = Values<c128>(*ones);
  EXPECT_NEAR(v[0].real(), 1, 1e-15);
  EXPECT_NEAR(std::abs(v[1]), 0, 1e-15);
  EXPECT_NEAR(std::abs(v[2]), 0, 1e-15);
  // RFFT of [1 0 -1 0] = [0, 2, 0].
  absl::StatusOr<Literal> r = RunFft(Vec<float>(xla::F32, {4}, {1, 0, -1, 0}),
                                     xla::RFFT, {4}, S(xla::C64, {3}));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(Values<c64>(*r), {c64(0), c64(2), c64(0)});
}

TEST(FftTest, MatchesNaiveDftForManyLengthsC128) {
  for (int64_t n : {1, 2, 5, 7, 8, 12, 16, 17, 30, 64}) {
    const std::vector<int64_t> dims = {3, n};
    const std::vector<c128> x = TestSignal(3 * n, true);
    for (xla::FftType type : {xla::FFT, xla::IFFT}) {
      absl::StatusOr<Literal> out =
          RunFft(Vec<c128>(xla::C128, dims, x), type, {n}, S(xla::C128, dims));
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<c128> want = NaiveDft(x, dims, 1, type == xla::IFFT);
      const std::vector<c128> got = Values<c128>(*out);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(std::abs(got[i] - want[i]), 0, 1e-10 * n)
            << "n=" << n << " i=" << i;
      }
    }
  }
}

TEST(FftTest, TwoAndThreeDimensionalC64) {
  Eigen::ThreadPool pool(2);
  Eigen::ThreadPoolDevice device(&pool, 2);
  for (const std::vector<int64_t>& dims :
       {std::vector<int64_t>{2, 4, 6}, std::vector<int64_t>{3, 5, 2, 4}}) {
    const int r = dims.size() - 1;
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    const std::vector<c128> x = TestSignal(count, true);
    std::vector<c64> xf(x.begin(), x.end());
    std::vector<int64_t> lengths(dims.begin() + 1, dims.end());
    absl::StatusOr<Literal> out = RunFft(Vec<c64>(xla::C64, dims, xf), xla::FFT,
                                         lengths, S(xla::C64, dims), &device);
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<c128> want = NaiveDft(x, dims, r, false);
    const std::vector<c64> got = Values<c64>(*out);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(std::abs(c128(got[i]) - want[i]), 0, 1e-4) << i;
    }
  }
}

TEST(FftTest, RfftMatchesNaiveAndIrfftRoundTrips) {
  for (int64_t n : {6, 7, 8}) {
    const std::vector<int64_t> dims = {2, 3, n};
    const std::vector<c128> x = TestSignal(2 * 3 * n, false);
    std::vector<double> xr;
    for (const c128& v : x) xr.push_back(v.real());
    const int64_t half = n / 2 + 1;
    absl::StatusOr<Literal> spectrum =
        RunFft(Vec<double>(xla::F64, dims, xr), xla::RFFT, {3, n},
               S(xla::C128, {2, 3, half}));
    ASSERT_TRUE(spectrum.ok()) << spectrum.status();
    const std::vector<c128> full = NaiveDft(x, dims, 2, false);
    const std::vector<c128> got = Values<c128>(*spectrum);
    for (int64_t row = 0; row < 6; ++row) {
      for (int64_t k = 0; k < half; ++k) {
        ASSERT_NEAR(std::abs(got[row * half + k] - full[row * n + k]), 0, 1e-10)
            << "n=" << n;
      }
    }
    absl::StatusOr<Literal> back =
        RunFft(*spectrum, xla::IRFFT, {3, n}, S(xla::F64, dims));
    ASSERT_TRUE(back.ok()) << back.status();
    const std::vector<double> y = Values<double>(*back);
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], xr[i], 1e-12) << "n=" << n << " i=" << i;
    }
  }
}

TEST(FftTest, IrfftIgnoresImaginaryDcAndNyquist) {
  // Spectrum [4+5i, 0, 2+7i] for n=4: the imaginary parts of DC and Nyquist
  // do not exist in a real signal. x[j] = (4 + 2*(-1)^j) / 4.
  absl::StatusOr<Literal> out =
      RunFft(Vec<c64>(xla::C64, {3}, {c64(4, 5), c64(0), c64(2, 7)}),
             xla::IRFFT, {4}, S(xla::F32, {4}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>(*out), (std::vector<float>{1.5f, 0.5f, 1.5f, 0.5f}));
}

TEST(FftTest, FftIfftRoundTripC64) {
  const std::vector<int64_t> dims = {4, 10};
  const std::vector<c128> x = TestSignal(40, true);
  std::vector<c64> xf(x.begin(), x.end());
  absl::StatusOr<Literal> f =
      RunFft(Vec<c64>(xla::C64, dims, xf), xla::FFT, {10}, S(xla::C64, dims));
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<Literal> b = RunFft(*f, xla::IFFT, {10}, S(xla::C64, dims));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<c64> y = Values<c64>(*b);
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(std::abs(y[i] - xf[i]), 0, 1e-5) << i;
  }
}

TEST(FftTest, Rejections) {
  absl::StatusOr<Literal> type = RunFft(Vec<float>(xla::F32, {4}, {1, 2, 3, 4}),
                                        xla::FFT, {4}, S(xla::F32, {4}));
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.status().code(), absl::StatusCode::kUnimplemented);
  // RFFT's dimensions must match fft_length (FFT's need not; see
  // fidelity_test).
  absl::StatusOr<Literal> len = RunFft(Vec<float>(xla::F32, {4}, {1, 2, 3, 4}),
                                       xla::RFFT, {5}, S(xla::C64, {3}));
  ASSERT_FALSE(len.ok());
  EXPECT_EQ(len.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(len.status().message().find("fft_length"), std::string::npos)
      << len.status();
  absl::StatusOr<Literal> many =
      RunFft(Vec<c64>(xla::C64, {1, 1, 1, 1}, {c64(1)}), xla::FFT, {1, 1, 1, 1},
             S(xla::C64, {1, 1, 1, 1}));
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu::emulator::interpreter
