// Where and how a LiteralProto stores the elements of each primitive type,
// for the parser (which appends, fills elided constants and permutes into
// the layout's order) and the printer (which reads the elements back).
//
// The storage follows XLA's LiteralProto: pred, s32, s64, u32, u64, f32, f64
// in repeated fields, c64/c128 as (real, imaginary) pairs; 16-bit types
// little-endian in bytes fields; 8-bit and smaller types one per byte.
// Elements are in the layout's physical order.
//
// Thread-safe: pure functions.

#ifndef HLO_TEXT_LITERAL_STORAGE_H_
#define HLO_TEXT_LITERAL_STORAGE_H_

#include <cstdint>
#include <string>

#include "proto/xla_data.pb.h"

namespace tpu::hlo::text_internal {

// The bytes field that stores `type`, or nullptr if `type` is stored in a
// repeated field (or not at all).
const std::string* BytesField(xla::PrimitiveType type,
                              const xla::LiteralProto& literal);
std::string* MutableBytesField(xla::PrimitiveType type,
                               xla::LiteralProto* literal);

// Number of elements stored for `type` (complex pairs count once).
int64_t StoredElementCount(xla::PrimitiveType type,
                           const xla::LiteralProto& literal);

// Appends one element. Real types take `v` (f32 and narrower take `single`,
// read without double rounding); integer types take `i` (signed) or `u`
// (unsigned); pred is i != 0. Complex types are not handled here.
void StoreValue(xla::PrimitiveType type, double v, float single, int64_t i,
                uint64_t u, xla::LiteralProto* literal);

// Reserves room for `count` elements (not for huge counts: those grow).
void ReserveElements(xla::PrimitiveType type, int64_t count,
                     xla::LiteralProto* literal);

// Appends `count` elements of the elided-constant pattern that hlo_parser.h
// documents.
void FillElided(xla::PrimitiveType type, int64_t count,
                xla::LiteralProto* literal);

// Reorders the elements, appended in row-major (logical) order, into the
// order of `shape`'s layout. No-op for the default layout.
void PermuteToLayout(const xla::ShapeProto& shape, xla::LiteralProto* literal);

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_LITERAL_STORAGE_H_
