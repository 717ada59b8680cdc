#include "hlo/text/literal_storage.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "google/protobuf/repeated_field.h"
#include "hlo/text/hlo_text_util.h"

namespace tpu::hlo::text_internal {
namespace {

// The LiteralProto fields, one list for every accessor below so that they
// cannot disagree. Repeated fields: (type, field, values per element).
#define TPU_HLO_REPEATED_FIELDS(X) \
  X(PRED, preds, 1)                \
  X(S32, s32s, 1)                  \
  X(S64, s64s, 1)                  \
  X(U32, u32s, 1)                  \
  X(U64, u64s, 1)                  \
  X(F32, f32s, 1)                  \
  X(F64, f64s, 1)                  \
  X(C64, c64s, 2)                  \
  X(C128, c128s, 2)

// Bytes fields: (type, field, bytes per element).
#define TPU_HLO_BYTES_FIELDS(X)       \
  X(S1, s1s, 1)                       \
  X(S2, s2s, 1)                       \
  X(S4, s4s, 1)                       \
  X(S8, s8s, 1)                       \
  X(U1, u1s, 1)                       \
  X(U2, u2s, 1)                       \
  X(U4, u4s, 1)                       \
  X(U8, u8s, 1)                       \
  X(S16, s16s, 2)                     \
  X(U16, u16s, 2)                     \
  X(F16, f16s, 2)                     \
  X(BF16, bf16s, 2)                   \
  X(F8E5M2, f8e5m2s, 1)               \
  X(F8E4M3, f8e4m3s, 1)               \
  X(F8E4M3FN, f8e4m3fns, 1)           \
  X(F8E4M3B11FNUZ, f8e4m3b11fnuzs, 1) \
  X(F8E3M4, f8e3m4s, 1)               \
  X(F8E5M2FNUZ, f8e5m2fnuzs, 1)       \
  X(F8E4M3FNUZ, f8e4m3fnuzs, 1)       \
  X(F4E2M1FN, f4e2m1fns, 1)           \
  X(F8E8M0FNU, f8e8m0fnus, 1)

// A case calling f(Access(), n), where Access::Get(literal) and
// Access::Mutable(&literal) return the field.
#define TPU_HLO_FIELD_CASE(TYPE, name, n)                                     \
  case xla::TYPE: {                                                           \
    struct Access {                                                           \
      static const auto& Get(const xla::LiteralProto& l) { return l.name(); } \
      static auto* Mutable(xla::LiteralProto* l) {                            \
        return l->mutable_##name();                                           \
      }                                                                       \
    };                                                                        \
    f(Access(), n);                                                           \
    return true;                                                              \
  }

// Calls f(access, values per element) for the repeated field of `type`;
// false if `type` is not stored in one.
template <typename F>
bool VisitRepeatedField(xla::PrimitiveType type, F&& f) {
  switch (type) {
    TPU_HLO_REPEATED_FIELDS(TPU_HLO_FIELD_CASE)
    default:
      return false;
  }
}

// Calls f(access, bytes per element) for the bytes field of `type`; false if
// `type` is not stored in one.
template <typename F>
bool VisitBytesField(xla::PrimitiveType type, F&& f) {
  switch (type) {
    TPU_HLO_BYTES_FIELDS(TPU_HLO_FIELD_CASE)
    default:
      return false;
  }
}

#undef TPU_HLO_FIELD_CASE
#undef TPU_HLO_BYTES_FIELDS
#undef TPU_HLO_REPEATED_FIELDS

int BytesPerElement(xla::PrimitiveType type) {
  int width = 0;
  VisitBytesField(type, [&](auto, int n) { width = n; });
  return width;
}

void AppendLittleEndian16(uint16_t v, std::string* out) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>(v >> 8));
}

// Deterministic value for element `i` of an elided constant (see
// hlo_parser.h).
int64_t ElidedPattern(int64_t i) { return (i * 7 + 3) % 17 - 8; }

// `value`'s low `bits` bits, sign-extended if `is_signed` (bits in 1..64).
int64_t WrapToWidth(int64_t value, int bits, bool is_signed) {
  if (bits <= 0 || bits >= 64) return value;
  const uint64_t low =
      static_cast<uint64_t>(value) & ((uint64_t{1} << bits) - 1);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  if (!is_signed || (low & sign) == 0) return static_cast<int64_t>(low);
  return static_cast<int64_t>(low) - static_cast<int64_t>(uint64_t{1} << bits);
}

// The pattern has period 34 (17 for values, 2 for pred).
constexpr int kElidedPeriod = 34;

xla::LiteralProto ElidedPeriod(xla::PrimitiveType type) {
  xla::LiteralProto period;
  for (int64_t i = 0; i < kElidedPeriod; ++i) {
    const int64_t k = ElidedPattern(i);
    const double real = static_cast<double>(k) / 16.0;
    if (type == xla::PRED) {
      period.add_preds(i % 2 == 1);
    } else if (type == xla::C64) {
      period.add_c64s(static_cast<float>(real));
      period.add_c64s(0);
    } else if (type == xla::C128) {
      period.add_c128s(real);
      period.add_c128s(0);
    } else if (IsFloatType(type)) {
      StoreValue(type, real, static_cast<float>(real), 0, 0, &period);
    } else {
      // Converted to the element type as XLA converts integers: the low
      // bits, so that the 1, 2 and 4-bit types (s4 is [-8, 7], u2 [0, 3])
      // get values they can hold.
      const int64_t value =
          WrapToWidth(IsSignedIntType(type) ? k : k + 8, IntBitWidth(type),
                      IsSignedIntType(type));
      StoreValue(type, 0, 0, value, static_cast<uint64_t>(value), &period);
    }
  }
  return period;
}

template <typename T>
void PermuteRepeated(const std::vector<int64_t>& to_physical, int group,
                     google::protobuf::RepeatedField<T>* field) {
  google::protobuf::RepeatedField<T> copy(*field);
  for (size_t l = 0; l < to_physical.size(); ++l) {
    for (int g = 0; g < group; ++g) {
      field->Set(to_physical[l] * group + g, copy.Get(l * group + g));
    }
  }
}

void PermuteBytes(const std::vector<int64_t>& to_physical, int width,
                  std::string* bytes) {
  std::string copy = *bytes;
  for (size_t l = 0; l < to_physical.size(); ++l) {
    std::memcpy(&(*bytes)[to_physical[l] * width], &copy[l * width], width);
  }
}

}  // namespace

const std::string* BytesField(xla::PrimitiveType type,
                              const xla::LiteralProto& literal) {
  const std::string* field = nullptr;
  VisitBytesField(type,
                  [&](auto access, int) { field = &access.Get(literal); });
  return field;
}

std::string* MutableBytesField(xla::PrimitiveType type,
                               xla::LiteralProto* literal) {
  std::string* field = nullptr;
  VisitBytesField(type,
                  [&](auto access, int) { field = access.Mutable(literal); });
  return field;
}

int64_t StoredElementCount(xla::PrimitiveType type,
                           const xla::LiteralProto& literal) {
  int64_t count = 0;
  auto size = [&](auto access, int n) {
    count = static_cast<int64_t>(access.Get(literal).size()) / n;
  };
  if (!VisitRepeatedField(type, size)) VisitBytesField(type, size);
  return count;
}

void StoreValue(xla::PrimitiveType type, double v, float single, int64_t i,
                uint64_t u, xla::LiteralProto* literal) {
  switch (type) {
    case xla::PRED:
      literal->add_preds(i != 0);
      return;
    case xla::S32:
      literal->add_s32s(static_cast<int32_t>(i));
      return;
    case xla::S64:
      literal->add_s64s(i);
      return;
    case xla::U32:
      literal->add_u32s(static_cast<uint32_t>(u));
      return;
    case xla::U64:
      literal->add_u64s(u);
      return;
    case xla::F32:
      literal->add_f32s(single);
      return;
    case xla::F64:
      literal->add_f64s(v);
      return;
    case xla::F16:
      AppendLittleEndian16(FloatToHalf(single), literal->mutable_f16s());
      return;
    case xla::BF16:
      AppendLittleEndian16(FloatToBf16(single), literal->mutable_bf16s());
      return;
    case xla::S16:
      AppendLittleEndian16(static_cast<uint16_t>(i), literal->mutable_s16s());
      return;
    case xla::U16:
      AppendLittleEndian16(static_cast<uint16_t>(u), literal->mutable_u16s());
      return;
    default:
      break;
  }
  std::string* bytes = MutableBytesField(type, literal);
  if (bytes == nullptr) return;
  if (IsMiniFloatType(type)) {
    bytes->push_back(static_cast<char>(EncodeMiniFloat(type, v)));
  } else if (IsSignedIntType(type)) {
    bytes->push_back(static_cast<char>(static_cast<int8_t>(i)));
  } else {
    bytes->push_back(static_cast<char>(static_cast<uint8_t>(u)));
  }
}

void ReserveElements(xla::PrimitiveType type, int64_t count,
                     xla::LiteralProto* literal) {
  // Let it grow; avoid huge reserves (and a count that overflowed).
  if (count <= 0 || count > (int64_t{1} << 28)) return;
  const int n = static_cast<int>(count);
  if (VisitRepeatedField(type, [&](auto access, int group) {
        access.Mutable(literal)->Reserve(group * n);
      })) {
    return;
  }
  std::string* bytes = MutableBytesField(type, literal);
  if (bytes != nullptr) bytes->reserve(BytesPerElement(type) * count);
}

void FillElided(xla::PrimitiveType type, int64_t count,
                xla::LiteralProto* literal) {
  // One period is encoded once and repeated.
  const xla::LiteralProto period = ElidedPeriod(type);
  if (VisitRepeatedField(type, [&](auto access, int group) {
        const auto& source = access.Get(period);
        auto* target = access.Mutable(literal);
        target->Reserve(static_cast<int>(count * group));
        for (int64_t i = 0; i < count * group; ++i) {
          target->Add(
              source.Get(static_cast<int>(i % (kElidedPeriod * group))));
        }
      })) {
    return;
  }
  const std::string* source = BytesField(type, period);
  std::string* target = MutableBytesField(type, literal);
  if (source == nullptr || target == nullptr) return;
  const size_t width = source->size() / kElidedPeriod;
  const size_t total = static_cast<size_t>(count) * width;
  target->reserve(target->size() + total);
  while (target->size() + source->size() <= total) target->append(*source);
  target->append(*source, 0, total - target->size());
}

void PermuteToLayout(const xla::ShapeProto& shape, xla::LiteralProto* literal) {
  const std::vector<int64_t> to_physical = LogicalToPhysicalIndices(shape);
  if (to_physical.empty()) return;
  const xla::PrimitiveType type = shape.element_type();
  if (VisitRepeatedField(type, [&](auto access, int group) {
        PermuteRepeated(to_physical, group, access.Mutable(literal));
      })) {
    return;
  }
  std::string* bytes = MutableBytesField(type, literal);
  if (bytes == nullptr) return;
  PermuteBytes(to_physical, BytesPerElement(type), bytes);
}

}  // namespace tpu::hlo::text_internal
