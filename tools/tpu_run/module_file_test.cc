#include "tools/tpu_run/module_file.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tpu {
namespace {

xla::HloModuleProto TinyModule() {
  xla::HloModuleProto module;
  module.set_name("tiny_module_with_a_long_name_to_look_like_a_message");
  module.set_entry_computation_name("main");
  module.set_entry_computation_id(1);
  xla::HloComputationProto* main = module.add_computations();
  main->set_name("main");
  main->set_id(1);
  main->set_root_id(2);
  xla::HloInstructionProto* p = main->add_instructions();
  p->set_name("p0");
  p->set_opcode("parameter");
  p->set_id(2);
  p->mutable_shape()->set_element_type(xla::F32);
  return module;
}

TEST(ModuleFileTest, ReadsHloModuleProto) {
  const xla::HloModuleProto module = TinyModule();
  absl::StatusOr<xla::HloModuleProto> got =
      ParseModule(module.SerializeAsString());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name(), module.name());
  EXPECT_EQ(got->computations(0).instructions(0).opcode(), "parameter");
}

TEST(ModuleFileTest, ReadsHloProto) {
  xla::HloProto hlo;
  *hlo.mutable_hlo_module() = TinyModule();
  absl::StatusOr<xla::HloModuleProto> got =
      ParseModule(hlo.SerializeAsString());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name(), TinyModule().name());
  EXPECT_EQ(got->computations_size(), 1);
}

TEST(ModuleFileTest, RejectsOtherBytes) {
  absl::StatusOr<xla::HloModuleProto> got =
      ParseModule(std::string("\x01\x02\x03garbage\xff\xff", 12));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(got.status().message(), "not an HLO module"))
      << got.status();
  // An empty module has no computations to run.
  got = ParseModule(xla::HloModuleProto().SerializeAsString());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModuleFileTest, TellsTextFromBinary) {
  EXPECT_TRUE(
      LooksLikeHloText("HloModule m\n\nENTRY e { ROOT c = f32[] "
                       "constant(1) }\n"));
  EXPECT_TRUE(
      LooksLikeHloText("// dumped by XLA\nHloModule m, "
                       "entry_computation_layout={()->f32[]}\n"));
  EXPECT_FALSE(LooksLikeHloText(TinyModule().SerializeAsString()));
  EXPECT_FALSE(LooksLikeHloText("just some text"));
}

TEST(ModuleFileTest, ReadsHloText) {
  absl::StatusOr<xla::HloModuleProto> got = ParseModule(
      "HloModule add_one\n\nENTRY main {\n  p = f32[2] parameter(0)\n"
      "  one = f32[] constant(1)\n  b = f32[2] broadcast(one), "
      "dimensions={}\n  ROOT r = f32[2] add(p, b)\n}\n");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->name(), "add_one");
  ASSERT_EQ(got->computations_size(), 1);
  EXPECT_EQ(got->computations(0).instructions_size(), 4);

  got = ParseModule(
      "HloModule broken\n\nENTRY main {\n  ROOT r = f32[2] "
      "add(nope, nope)\n}\n");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(got.status().message(), "HLO text: line"))
      << got.status();
}

TEST(ModuleFileTest, FileErrorsNameThePath) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/missing.pb");
  absl::StatusOr<xla::HloModuleProto> got = ReadModuleFile(path);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(got.status().message(), path));

  const std::string bad = absl::StrCat(::testing::TempDir(), "/bad.pb");
  std::ofstream(bad) << "\x01\x02 not a module";
  got = ReadModuleFile(bad);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(got.status().message(), bad));
  std::remove(bad.c_str());
}

}  // namespace
}  // namespace tpu
