// A masked timer is `inactive`, never `missing`, wherever its marker sits: on the properties a
// real systemd 252 reported (fixtures/masked.json, systemd_capture) for a package's timer in
// /lib/systemd/system marked by the administrator's drop-in and masked, and for a mask with no
// unit file at all, over unit files laid out as they were.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "schedwatch/classify.h"
#include "sources/catalog.h"
#include "sources/systemd/systemd_source.h"
#include "sources/systemd/timer_mapping.h"
#include "tests/test_util.h"

namespace schedwatch::systemd {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;
using testing::WriteFile;

constexpr std::int64_t kNow = 1796040000;

ManagerReading LoadMasked() {
  std::ifstream in(std::string(SCHEDWATCH_TEST_DIR) + "/sources/systemd/fixtures/masked.json");
  auto reading = ManagerReadingFromJson(nlohmann::json::parse(in));
  EXPECT_TRUE(reading) << reading.error();
  return reading ? *reading : ManagerReading{};
}

class MaskedTimer : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(root() / "lib/systemd/system/sw-vendor.timer",
              "[Unit]\nDescription=schedwatch test vendor timer\n\n[Timer]\n"
              "OnCalendar=*-*-* *:*:00/10\nAccuracySec=1s\n\n[Install]\n"
              "WantedBy=timers.target\n");
    WriteFile(root() / "etc/systemd/system/sw-vendor.timer.d/schedwatch.conf",
              "[Unit]\nX-Schedwatch-Role=sw-vendor\nX-Schedwatch-Spec-Version=1\n");
    for (const char* unit : {"sw-vendor.timer", "sw-veiled.timer"}) {
      fs::create_symlink("/dev/null", root() / "etc/systemd/system" / unit);
    }
    WriteFile(dir_.path() / "spec.yaml", R"(version: 1
sources:
  box: {type: systemd}
jobs:
  - {role: sw-vendor, source: box, schedule: "*-*-* *:*:00/10", spec_version: "1"}
)");
    auto spec = LoadSpecFile((dir_.path() / "spec.yaml").string());
    ASSERT_TRUE(spec.ok()) << spec.error();
    spec_ = std::move(*spec);
  }

  fs::path root() const { return dir_.path() / "root"; }

  TempDir dir_;
  Spec spec_;
};

TEST_F(MaskedTimer, AVendorTimerMarkedInADropInIsInactiveBecauseMasked) {
  ManagerReading reading = LoadMasked();
  auto markers = ReadTimerMarkers(reading, root().string(), nullptr);
  EXPECT_EQ(markers["sw-vendor.timer"].error, "");
  EXPECT_EQ(markers["sw-vendor.timer"].role, "sw-vendor");
  EXPECT_EQ(markers["sw-veiled.timer"].role, "");  // no file, no drop-in: no marker
  ProblemSink problems;
  TimerMapping mapped = MapTimers(reading, markers, 0, problems);
  ASSERT_EQ(mapped.objects.size(), 1u);
  const LiveObject& vendor = mapped.objects.front();
  EXPECT_EQ(vendor.id(), "sw-vendor.timer");
  EXPECT_EQ(vendor.role(), "sw-vendor");
  EXPECT_FALSE(vendor.enabled);
  EXPECT_EQ(vendor.state(), "masked");
  EXPECT_EQ(vendor.schedule(), "*-*-* *:*:00/10");  // from the vendor's file under the mask
  EXPECT_EQ(vendor.spec_version(), "1");            // from the drop-in

  RoleObservation observation;
  observation.source_up = true;
  observation.objects = mapped.objects;
  observation.absence_confirmed = false;
  observation.desired_since = kNow;
  EXPECT_EQ(Classify(spec_.jobs.front(), observation, kNow).ConditionList(), "inactive");
}

}  // namespace
}  // namespace schedwatch::systemd
