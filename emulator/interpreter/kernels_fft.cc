// Kernel family: fft (FFT, IFFT, RFFT, IRFFT over the last len(fft_length)
// dimensions, 1 to 3 of them; c64/f32 and c128/f64).
//
// Conventions (XLA's): FFT uses exp(-2 pi i jk/n); IFFT uses exp(+2 pi i jk/n)
// and divides by the product of fft_length. RFFT keeps the n/2+1 non-negative
// frequencies of the last dimension. IRFFT reads n/2+1 frequencies of the last
// dimension, extends them Hermitian-symmetrically (so the imaginary parts of
// the DC and, for even n, Nyquist terms are ignored) and returns the real
// signal.
//
// Method: every transform runs in complex<double> (then rounds once to the
// result type): radix-2 for power-of-two lengths, Bluestein's chirp-z with a
// power-of-two convolution otherwise. Plans (twiddles, chirps) are built at
// compile time and shared read-only by concurrent runs.

#include <algorithm>
#include <cmath>
#include <complex>

#include "emulator/interpreter/elementwise_common.h"

namespace tpu::emulator::interpreter {
namespace {

using cd = std::complex<double>;

bool IsPowerOfTwo(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// An unscaled forward DFT of one length.
class Fft1D {
 public:
  explicit Fft1D(int64_t n) : n_(n) {
    if (n_ <= 1) return;
    if (IsPowerOfTwo(n_)) {
      twiddle_.resize(n_ / 2);
      for (int64_t k = 0; k < n_ / 2; ++k) {
        const double angle = -2.0 * M_PI * static_cast<double>(k) / n_;
        twiddle_[k] = cd(std::cos(angle), std::sin(angle));
      }
      return;
    }
    m_ = 1;
    while (m_ < 2 * n_ - 1) m_ *= 2;
    sub_ = std::make_shared<Fft1D>(m_);
    chirp_.resize(n_);
    for (int64_t k = 0; k < n_; ++k) {
      // k^2 mod 2n keeps the angle argument small and exact.
      const int64_t k2 = static_cast<int64_t>(
          (static_cast<unsigned __int128>(k) * k) % (2 * n_));
      const double angle = -M_PI * static_cast<double>(k2) / n_;
      chirp_[k] = cd(std::cos(angle), std::sin(angle));
    }
    std::vector<cd> b(m_, cd(0));
    b[0] = std::conj(chirp_[0]);
    for (int64_t k = 1; k < n_; ++k) {
      b[k] = std::conj(chirp_[k]);
      b[m_ - k] = std::conj(chirp_[k]);
    }
    std::vector<cd> scratch;
    sub_->Forward(b.data(), scratch);
    kernel_ = std::move(b);
  }

  // In place. `scratch` is caller-owned working memory (resized as needed).
  void Forward(cd* x, std::vector<cd>& scratch) const {
    if (n_ <= 1) return;
    if (!twiddle_.empty()) {
      Radix2(x);
      return;
    }
    scratch.assign(m_, cd(0));
    for (int64_t k = 0; k < n_; ++k) scratch[k] = x[k] * chirp_[k];
    std::vector<cd> inner;
    sub_->Forward(scratch.data(), inner);
    for (int64_t k = 0; k < m_; ++k) scratch[k] *= kernel_[k];
    // Inverse by conjugation: ifft(y) = conj(fft(conj(y))) / m.
    for (int64_t k = 0; k < m_; ++k) scratch[k] = std::conj(scratch[k]);
    sub_->Forward(scratch.data(), inner);
    const double scale = 1.0 / static_cast<double>(m_);
    for (int64_t k = 0; k < n_; ++k) {
      x[k] = std::conj(scratch[k]) * scale * chirp_[k];
    }
  }

  // Unscaled inverse (exp(+i...)).
  void Inverse(cd* x, std::vector<cd>& scratch) const {
    for (int64_t k = 0; k < n_; ++k) x[k] = std::conj(x[k]);
    Forward(x, scratch);
    for (int64_t k = 0; k < n_; ++k) x[k] = std::conj(x[k]);
  }

 private:
  void Radix2(cd* x) const {
    for (int64_t i = 1, j = 0; i < n_; ++i) {
      int64_t bit = n_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[i], x[j]);
    }
    for (int64_t len = 2; len <= n_; len <<= 1) {
      const int64_t half = len / 2, step = n_ / len;
      for (int64_t start = 0; start < n_; start += len) {
        for (int64_t k = 0; k < half; ++k) {
          const cd t = x[start + k + half] * twiddle_[k * step];
          x[start + k + half] = x[start + k] - t;
          x[start + k] += t;
        }
      }
    }
  }

  int64_t n_;
  std::vector<cd> twiddle_;
  int64_t m_ = 0;
  std::shared_ptr<Fft1D> sub_;
  std::vector<cd> chirp_, kernel_;
};

// Transforms every line of `data` (dims `dims`) along `axis`.
void TransformAxis(const Eigen::ThreadPoolDevice* device, cd* data,
                   const std::vector<int64_t>& dims, int64_t axis,
                   const Fft1D& fft, bool inverse) {
  const int64_t len = dims[axis];
  int64_t inner = 1, total = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    total *= dims[d];
    if (static_cast<int64_t>(d) > axis) inner *= dims[d];
  }
  if (len <= 1 || total == 0) return;
  const int64_t lines = total / len;
  ParallelFor(device, lines, 20.0 * len * std::log2(len + 1.0),
              [&](int64_t begin, int64_t end) {
                std::vector<cd> line(len), scratch;
                for (int64_t l = begin; l < end; ++l) {
                  const int64_t outer = l / inner, in = l % inner;
                  cd* base = data + outer * len * inner + in;
                  for (int64_t k = 0; k < len; ++k) line[k] = base[k * inner];
                  if (inverse) {
                    fft.Inverse(line.data(), scratch);
                  } else {
                    fft.Forward(line.data(), scratch);
                  }
                  for (int64_t k = 0; k < len; ++k) base[k * inner] = line[k];
                }
              });
}

struct FftPlan {
  xla::FftType type;
  Shape result;
  std::vector<int64_t> lengths;
  // Working dims: [batch, lengths...] with the last replaced by the input's
  // last dim for IRFFT (the half spectrum).
  int64_t batch = 1;
  std::vector<std::shared_ptr<const Fft1D>> ffts;  // one per fft dim
};

template <typename Real>
std::unique_ptr<Kernel> MakeFft(FftPlan plan) {
  using Complex = std::complex<Real>;
  return MakeKernel(
      [plan](KernelContext& context,
             absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Eigen::ThreadPoolDevice* device = context.device();
        const int64_t r = plan.lengths.size();
        std::vector<int64_t> full = {plan.batch};
        for (int64_t n : plan.lengths) full.push_back(n);
        int64_t full_count = 1, fft_size = 1;
        for (int64_t v : full) full_count *= v;
        for (int64_t n : plan.lengths) fft_size *= n;
        Literal out = Literal::Uninitialized(plan.result);
        if (plan.result.element_count() == 0) return out;
        const Literal& in = *operands[0].value;
        switch (plan.type) {
          case xla::FFT:
          case xla::IFFT: {
            const bool inverse = plan.type == xla::IFFT;
            std::vector<cd> data(full_count);
            const Complex* src = in.data<Complex>().data();
            for (int64_t i = 0; i < full_count; ++i) data[i] = cd(src[i]);
            for (int64_t a = 0; a < r; ++a) {
              TransformAxis(device, data.data(), full, a + 1, *plan.ffts[a],
                            inverse);
            }
            const double scale = inverse ? 1.0 / fft_size : 1.0;
            Complex* dst = static_cast<Complex*>(out.mutable_untyped_data());
            for (int64_t i = 0; i < full_count; ++i) {
              dst[i] = Complex(data[i] * scale);
            }
            return out;
          }
          case xla::RFFT: {
            std::vector<cd> data(full_count);
            const Real* src = in.data<Real>().data();
            for (int64_t i = 0; i < full_count; ++i) data[i] = cd(src[i], 0.0);
            for (int64_t a = 0; a < r; ++a) {
              TransformAxis(device, data.data(), full, a + 1, *plan.ffts[a],
                            false);
            }
            const int64_t n = plan.lengths.back();
            const int64_t half = n / 2 + 1;
            const int64_t rows = full_count / n;
            Complex* dst = static_cast<Complex*>(out.mutable_untyped_data());
            for (int64_t row = 0; row < rows; ++row) {
              for (int64_t k = 0; k < half; ++k) {
                dst[row * half + k] = Complex(data[row * n + k]);
              }
            }
            return out;
          }
          default: {  // IRFFT
            const int64_t n = plan.lengths.back();
            const int64_t half = n / 2 + 1;
            std::vector<int64_t> half_dims = full;
            half_dims.back() = half;
            const int64_t half_count = full_count / n * half;
            std::vector<cd> spectrum(half_count);
            const Complex* src = in.data<Complex>().data();
            for (int64_t i = 0; i < half_count; ++i) spectrum[i] = cd(src[i]);
            // Outer fft dims first (linear per frequency of the last dim).
            for (int64_t a = 0; a + 1 < r; ++a) {
              TransformAxis(device, spectrum.data(), half_dims, a + 1,
                            *plan.ffts[a], true);
            }
            const int64_t rows = full_count / n;
            Real* dst = static_cast<Real*>(out.mutable_untyped_data());
            const double scale = 1.0 / fft_size;
            const Fft1D& last = *plan.ffts.back();
            ParallelFor(device, rows, 20.0 * n * std::log2(n + 1.0),
                        [&](int64_t begin, int64_t end) {
                          std::vector<cd> line(n), scratch;
                          for (int64_t row = begin; row < end; ++row) {
                            const cd* h = spectrum.data() + row * half;
                            for (int64_t k = 0; k < n; ++k) {
                              line[k] = k < half ? h[k] : std::conj(h[n - k]);
                            }
                            // DC and Nyquist must be real in a real signal.
                            line[0] = cd(line[0].real(), 0);
                            if (n % 2 == 0)
                              line[n / 2] = cd(line[n / 2].real(), 0);
                            last.Inverse(line.data(), scratch);
                            for (int64_t k = 0; k < n; ++k) {
                              dst[row * n + k] =
                                  static_cast<Real>(line[k].real() * scale);
                            }
                          }
                        });
            return out;
          }
        }
      });
}

// `in` zero-padded or truncated to `dims` (same rank).
Literal Resize(const Eigen::ThreadPoolDevice* device, const Literal& in,
               const std::vector<int64_t>& dims) {
  Literal out = Literal::Zeros(Shape::Array(in.shape().element_type(), dims));
  std::vector<int64_t> overlap(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    overlap[d] = std::min(dims[d], in.shape().dimensions(d));
  }
  CopyND(device, ByteWidth(in.shape().element_type()), overlap,
         static_cast<const char*>(in.untyped_data()),
         RowMajorStrides(in.shape().dimensions()),
         static_cast<char*>(out.mutable_untyped_data()), RowMajorStrides(dims));
  return out;
}

// FFT/IFFT whose operand's dimensions differ from fft_length: the operand is
// zero-padded or truncated to fft_length, transformed, and the result
// resized back to the operand's shape, as XLA's evaluator does.
std::unique_ptr<Kernel> MakeResizedFft(FftPlan plan,
                                       const std::vector<int64_t>& fft_dims,
                                       bool is_double) {
  const Shape result = plan.result;
  plan.result = Shape::Array(result.element_type(), fft_dims);
  for (int64_t d = 0; d + static_cast<int64_t>(plan.lengths.size()) <
                      static_cast<int64_t>(fft_dims.size());
       ++d) {
    plan.batch *= fft_dims[d];
  }
  for (int64_t n : plan.lengths) {
    plan.ffts.push_back(std::make_shared<const Fft1D>(n));
  }
  std::shared_ptr<const Kernel> inner = is_double
                                            ? MakeFft<double>(std::move(plan))
                                            : MakeFft<float>(std::move(plan));
  return MakeKernel(
      [inner, result, fft_dims](
          KernelContext& context,
          absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
        const Literal padded =
            Resize(context.device(), *operands[0].value, fft_dims);
        const Operand operand{&padded, false};
        absl::StatusOr<Literal> transformed = inner->Run(context, {operand});
        if (!transformed.ok()) return transformed.status();
        return Resize(context.device(), *transformed, result.dimensions());
      });
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileFft(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& in = instruction.operand(0)->shape();
  if (absl::Status s = ExpectArray(in, "fft operand"); !s.ok()) return s;
  FftPlan plan;
  plan.type = instruction.proto().fft_type();
  for (int64_t n : instruction.proto().fft_length()) plan.lengths.push_back(n);
  const int64_t r = plan.lengths.size();
  if (r < 1 || r > 3) {
    return Malformed(
        absl::StrCat("fft_length must name 1 to 3 dimensions, "
                     "got ",
                     r));
  }
  if (in.rank() < r) {
    return Malformed(absl::StrCat("fft operand ", in.ToString(),
                                  " has fewer dimensions than fft_length (", r,
                                  ")"));
  }
  for (int64_t n : plan.lengths) {
    if (n < 0 || n > (int64_t{1} << 32)) {
      return Malformed(absl::StrCat("fft_length ", n, " is out of range"));
    }
  }
  const xla::PrimitiveType t = in.element_type();
  const bool is_double = t == xla::C128 || t == xla::F64;
  xla::PrimitiveType want_in, want_out;
  switch (plan.type) {
    case xla::FFT:
    case xla::IFFT:
      want_in = want_out = is_double ? xla::C128 : xla::C64;
      break;
    case xla::RFFT:
      want_in = is_double ? xla::F64 : xla::F32;
      want_out = is_double ? xla::C128 : xla::C64;
      break;
    case xla::IRFFT:
      want_in = is_double ? xla::C128 : xla::C64;
      want_out = is_double ? xla::F64 : xla::F32;
      break;
    default:
      return Malformed(
          absl::StrCat("unknown fft_type ", static_cast<int>(plan.type)));
  }
  if (t != want_in) {
    return UnsupportedType(instruction, t);
  }
  // XLA's shape inference: FFT and IFFT return the operand's shape whatever
  // fft_length says (its evaluator zero-pads or truncates the operand to
  // fft_length and the transform back); RFFT's dimensions match fft_length
  // and IRFFT's too except the last, fft_length/2+1. A zero-length last
  // dimension stays zero (RFFT of length 0 gives 0 elements, not 1; IRFFT of
  // length 0 takes a last dimension of 0 or 1).
  const std::vector<int64_t> in_dims = in.dimensions();
  const int64_t n_last = plan.lengths.back();
  const bool complex_to_complex =
      plan.type == xla::FFT || plan.type == xla::IFFT;
  std::vector<int64_t> expect_in(in_dims.begin(), in_dims.end() - r);
  for (int64_t n : plan.lengths) expect_in.push_back(n);
  if (plan.type == xla::IRFFT) {
    const bool zero = in_dims.back() == 0 && n_last == 0;
    expect_in.back() = zero ? 0 : n_last / 2 + 1;
  }
  if (!complex_to_complex && in_dims != expect_in) {
    return Malformed(absl::StrCat(
        "fft operand ", in.ToString(),
        " does not match fft_length for this "
        "fft_type: its last dimensions must be ",
        absl::StrJoin(
            std::vector<int64_t>(expect_in.end() - r, expect_in.end()), ",")));
  }
  std::vector<int64_t> out_dims(in_dims.begin(), in_dims.end() - r);
  for (int64_t n : plan.lengths) out_dims.push_back(n);
  if (plan.type == xla::RFFT && n_last != 0) out_dims.back() = n_last / 2 + 1;
  if (complex_to_complex) out_dims = in_dims;
  plan.result = Shape::Array(want_out, out_dims);
  if (absl::Status s = ExpectResultShape(instruction, plan.result); !s.ok()) {
    return s;
  }
  const bool zero_length = std::find(plan.lengths.begin(), plan.lengths.end(),
                                     0) != plan.lengths.end();
  if (plan.result.element_count() == 0 || zero_length) {
    // Nothing to transform, and a zero-length transform is zeros (XLA's
    // evaluator); no plan exists for length 0.
    return MakeConstantKernel(Literal::Zeros(plan.result));
  }
  if (complex_to_complex && in_dims != expect_in) {
    return MakeResizedFft(std::move(plan), expect_in, is_double);
  }
  for (int64_t d = 0; d + r < in.rank(); ++d) plan.batch *= in_dims[d];
  for (int64_t n : plan.lengths) {
    plan.ffts.push_back(std::make_shared<const Fft1D>(n));
  }
  if (is_double) return MakeFft<double>(std::move(plan));
  return MakeFft<float>(std::move(plan));
}

}  // namespace

void RegisterFftKernels(KernelRegistry& registry) {
  registry.Register("fft", &CompileFft);
}

}  // namespace tpu::emulator::interpreter
