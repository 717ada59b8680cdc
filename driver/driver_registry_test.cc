#include "driver/driver_registry.h"

#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

// A driver that only says which factory made it.
class NamedDriver : public TpuDriver {
 public:
  explicit NamedDriver(std::string name) : name(std::move(name)) {}
  std::string name;
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override {
    return absl::UnimplementedError(name);
  }
  absl::Status Reset() override { return absl::OkStatus(); }
  std::unique_ptr<BufferHandle> Allocate(int32_t, tpu_driver::MemoryRegion,
                                         int64_t,
                                         absl::Span<Event* const>) override {
    return nullptr;
  }
  std::unique_ptr<BufferHandle> Allocate(int32_t, tpu_driver::MemoryRegion,
                                         const xla::ShapeProto&,
                                         absl::Span<Event* const>) override {
    return nullptr;
  }
  std::unique_ptr<BufferHandle> AllocateTuple(
      int32_t, tpu_driver::MemoryRegion, absl::Span<BufferHandle* const>,
      absl::Span<Event* const>) override {
    return nullptr;
  }
  std::shared_ptr<Event> Deallocate(std::unique_ptr<BufferHandle>,
                                    absl::Span<Event* const>) override {
    return nullptr;
  }
  std::shared_ptr<Event> TransferToDevice(const void*, BufferHandle*,
                                          absl::Span<Event* const>) override {
    return nullptr;
  }
  std::shared_ptr<Event> TransferFromDevice(const BufferHandle*, void*,
                                            absl::Span<Event* const>) override {
    return nullptr;
  }
  std::shared_ptr<Event> TransferFromDeviceToDevice(
      const BufferHandle*, BufferHandle*, absl::Span<Event* const>) override {
    return nullptr;
  }
  std::unique_ptr<CompiledProgramHandle> CompileProgram(
      const xla::HloProto&, int32_t, absl::Span<Event* const>) override {
    return nullptr;
  }
  std::unique_ptr<LoadedProgramHandle> LoadProgram(
      int32_t, const CompiledProgramHandle*,
      absl::Span<Event* const>) override {
    return nullptr;
  }
  std::shared_ptr<Event> UnloadProgram(std::unique_ptr<LoadedProgramHandle>,
                                       absl::Span<Event* const>) override {
    return nullptr;
  }
  std::shared_ptr<Event> ExecuteProgram(LoadedProgramHandle*,
                                        absl::Span<BufferHandle* const>,
                                        absl::Span<BufferHandle* const>,
                                        const xla::DeviceAssignmentProto&,
                                        absl::Span<Event* const>) override {
    return nullptr;
  }
};

DriverFactory Named(std::string name) {
  return [name](const tpu_driver::TpuDriverConfig&)
             -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
    return std::make_unique<NamedDriver>(name);
  };
}

std::string OpenName(absl::string_view address) {
  auto driver = DriverRegistry::Open(address);
  if (!driver.ok()) return driver.status().ToString();
  return static_cast<NamedDriver*>(driver->get())->name;
}

TEST(DriverRegistryTest, LongestPrefixWins) {
  DriverRegistry::Register("test://", Named("plain"));
  DriverRegistry::Register("test+pod://", Named("pod"));
  EXPECT_EQ(OpenName("test://h:1"), "plain");
  EXPECT_EQ(OpenName("test+pod://h:1,h:2"), "pod");
}

TEST(DriverRegistryTest, LatestRegistrationWins) {
  DriverRegistry::Register("again://", Named("first"));
  DriverRegistry::Register("again://", Named("second"));
  EXPECT_EQ(OpenName("again://x"), "second");
}

TEST(DriverRegistryTest, UnknownSchemeNamesItAndListsKnownOnes) {
  DriverRegistry::Register("known://", Named("k"));
  auto driver = DriverRegistry::Open("nosuch://host:1");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(driver.status().message().find("\"nosuch://\""), std::string::npos)
      << driver.status();
  EXPECT_NE(driver.status().message().find("known://"), std::string::npos)
      << driver.status();
}

TEST(DriverRegistryTest, PrefixesAreSorted) {
  DriverRegistry::Register("zz://", Named("z"));
  DriverRegistry::Register("aa://", Named("a"));
  std::vector<std::string> prefixes = DriverRegistry::Prefixes();
  EXPECT_TRUE(std::is_sorted(prefixes.begin(), prefixes.end()));
  EXPECT_NE(std::find(prefixes.begin(), prefixes.end(), "aa://"),
            prefixes.end());
}

TEST(DriverRegistryTest, ConfigReachesTheFactory) {
  DriverRegistry::Register(
      "cfg://",
      [](const tpu_driver::TpuDriverConfig& config)
          -> absl::StatusOr<std::unique_ptr<TpuDriver>> {
        return absl::UnavailableError(absl::StrCat(
            config.worker(), " ", config.grpc().connection_timeout_secs()));
      });
  tpu_driver::TpuDriverConfig config;
  config.set_worker("cfg://w");
  config.mutable_grpc()->set_connection_timeout_secs(3);
  auto driver = DriverRegistry::Open(config);
  EXPECT_EQ(driver.status(), absl::UnavailableError("cfg://w 3"));
}

}  // namespace
}  // namespace tpu::driver
