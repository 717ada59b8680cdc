#include "tools/tpu_run/npy.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tpu {
namespace {

// A .npy file as NumPy writes it: magic, version, little-endian header
// length, the dict, spaces and '\n' up to a multiple of 64, then the data.
std::string NpyV1(const std::string& dict, const std::string& data) {
  size_t total = 10 + dict.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  size_t len = dict.size() + pad + 1;
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  out += dict + std::string(pad, ' ') + "\n" + data;
  return out;
}

std::string FloatBytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) out.append(reinterpret_cast<const char*>(&v), 4);
  return out;
}

TEST(NpyTest, SerializesExactlyLikeNumpy) {
  NpyArray array;
  array.dtype = {'f', 4};
  array.shape = {2, 3};
  array.data = FloatBytes({0, 1, 2, 3, 4, 5});
  const std::string bytes = SerializeNpy(array);
  const std::string expected =
      NpyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            array.data);
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ((bytes.size() - array.data.size()) % 64, 0u);
  EXPECT_EQ(bytes.size(), 128u + 24u);
}

TEST(NpyTest, ShapesPrintLikePython) {
  NpyArray a;
  EXPECT_EQ(a.ShapeString(), "()");
  a.shape = {5};
  EXPECT_EQ(a.ShapeString(), "(5,)");
  a.shape = {1, 2, 3};
  EXPECT_EQ(a.ShapeString(), "(1, 2, 3)");
}

TEST(NpyTest, RoundTripsEveryDtype) {
  const NpyDtype dtypes[] = {{'b', 1}, {'i', 1}, {'i', 2}, {'i', 4}, {'i', 8},
                             {'u', 1}, {'u', 2}, {'u', 4}, {'u', 8}, {'f', 2},
                             {'f', 4}, {'f', 8}, {'c', 8}, {'c', 16}};
  for (const NpyDtype& dtype : dtypes) {
    NpyArray array;
    array.dtype = dtype;
    array.shape = {3, 1};
    for (int i = 0; i < 3 * dtype.item_size; ++i) {
      array.data.push_back(static_cast<char>(i * 7 + 1));
    }
    if (dtype.kind == 'b') array.data = std::string("\x01\x00\x01", 3);
    absl::StatusOr<NpyArray> back = ParseNpy(SerializeNpy(array));
    ASSERT_TRUE(back.ok()) << dtype.Name() << ": " << back.status();
    EXPECT_EQ(back->dtype, dtype);
    EXPECT_EQ(back->shape, array.shape);
    EXPECT_EQ(back->data, array.data) << dtype.Name();
  }
}

TEST(NpyTest, ParsesScalarsAndDoubleQuotesAndLongs) {
  absl::StatusOr<NpyArray> scalar = ParseNpy(
      NpyV1("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", "\x01"));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_TRUE(scalar->shape.empty());
  EXPECT_EQ(scalar->dtype.Name(), "bool");

  absl::StatusOr<NpyArray> odd = ParseNpy(
      NpyV1("{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<i2\"}",
            std::string(4, '\0')));
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(odd->shape, std::vector<int64_t>{2});
  EXPECT_EQ(odd->dtype.Name(), "int16");
}

TEST(NpyTest, ParsesVersion2) {
  std::string dict =
      "{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }";
  std::string out = "\x93NUMPY";
  out.push_back(2);
  out.push_back(0);
  const uint32_t len = dict.size() + 1;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(len >> (8 * i)));
  out += dict + "\n" + std::string("\x2a\x00\x00\x00", 4);
  absl::StatusOr<NpyArray> array = ParseNpy(out);
  ASSERT_TRUE(array.ok()) << array.status();
  EXPECT_EQ(array->dtype.Name(), "uint32");
  EXPECT_EQ(array->data[0], 42);
}

TEST(NpyTest, LargeHeadersUseVersion2) {
  NpyArray array;
  array.dtype = {'u', 1};
  // 25000 dimensions of size 1: the shape alone needs more than 64 KiB.
  array.shape.assign(25000, 1);
  array.data = "\x07";
  const std::string bytes = SerializeNpy(array);
  EXPECT_EQ(bytes[6], 2);
  absl::StatusOr<NpyArray> back = ParseNpy(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape.size(), 25000u);
  EXPECT_EQ(back->data, "\x07");
}

void ExpectError(const std::string& bytes, absl::string_view substring) {
  absl::StatusOr<NpyArray> got = ParseNpy(bytes);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(got.status().message(), substring))
      << got.status();
}

TEST(NpyTest, RejectsFortranOrder) {
  ExpectError(NpyV1("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }",
                    FloatBytes({1})),
              "Fortran-ordered");
}

TEST(NpyTest, RejectsBigEndian) {
  ExpectError(NpyV1("{'descr': '>i4', 'fortran_order': False, 'shape': (1,), }",
                    std::string(4, '\0')),
              "big-endian");
}

TEST(NpyTest, RejectsBadFiles) {
  ExpectError("PK\x03\x04 not numpy at all", "not a .npy file");
  std::string v9 = NpyV1("{}", "");
  v9[6] = 9;
  ExpectError(v9, "version 9.0");
  ExpectError(NpyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                    FloatBytes({1, 2})),
              "is 8 bytes but a float32 array of shape (3,) needs 12");
  ExpectError(NpyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                    FloatBytes({1, 2})),
              "needs 4");
  ExpectError(NpyV1("{'descr': [('a', '<f4')], 'fortran_order': False, "
                    "'shape': (1,), }",
                    FloatBytes({1})),
              "structured");
  ExpectError(NpyV1("{'descr': '<f4', 'shape': (1,), }", FloatBytes({1})),
              "needs the keys");
  ExpectError(NpyV1("{'descr': '<U4', 'fortran_order': False, 'shape': (1,), }",
                    std::string(16, 'a')),
              "unsupported .npy dtype '<U4'");
  ExpectError(
      NpyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""),
      "non-negative integers");
  std::string truncated = NpyV1(
      "{'descr': '<f4', 'fortran_order': False, "
      "'shape': (1,), }",
      "");
  ExpectError(truncated.substr(0, 40), "ends inside the header");
}

TEST(NpyTest, FilesRoundTripAndMissingFileIsNotFound) {
  const std::string dir = ::testing::TempDir();
  const std::string path = absl::StrCat(dir, "/npy_test_file.npy");
  NpyArray array;
  array.dtype = {'i', 4};
  array.shape = {2};
  array.data = std::string("\x01\x00\x00\x00\xff\xff\xff\xff", 8);
  ASSERT_TRUE(WriteNpyFile(path, array).ok());
  absl::StatusOr<NpyArray> back = ReadNpyFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->data, array.data);
  std::remove(path.c_str());

  absl::StatusOr<NpyArray> missing = ReadNpyFile(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.status().message(), path));
}

}  // namespace
}  // namespace tpu
