// The X-Schedwatch-* markers of unit files, parsed as systemd reads unit files, and read as a
// root-owned exporter reads files others may write.
#include "sources/systemd/unit_markers.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace schedwatch::systemd {
namespace {

UnitMarkers Parse(std::string_view text) {
  UnitMarkers markers;
  ApplyUnitFile(text, "a.timer", markers);
  return markers;
}

TEST(UnitMarkers, ReadsRoleAndVersionFromTheUnitSection) {
  auto m = Parse(
      "# a comment\n[Unit]\nDescription=Backup\nX-Schedwatch-Role = db-backup \n"
      "X-Schedwatch-Spec-Version=7\n[Timer]\nOnCalendar=*-*-* 02:00\nOnCalendar=Sat 04:00\n"
      "[Install]\nWantedBy=timers.target\n");
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.role, "db-backup");
  EXPECT_EQ(m.spec_version, "7");
  EXPECT_EQ(m.on_calendar, (std::vector<std::string>{"*-*-* 02:00", "Sat 04:00"}));
}

TEST(UnitMarkers, OtherSectionsCommentsAndContinuations) {
  // Keys outside [Unit] are not markers; ';' and '#' start comments; '\' continues a line.
  auto m = Parse(
      "[Service]\nX-Schedwatch-Role=wrong\n[Unit]\n;X-Schedwatch-Role=commented\n"
      "X-Schedwatch-Spec-\\\nVersion=2\nX-Schedwatch-Role=right\n");
  EXPECT_EQ(m.role, "right");
  EXPECT_EQ(m.spec_version, "");  // "X-Schedwatch-Spec- Version" is another key, as in systemd
}

TEST(UnitMarkers, LaterAssignmentsWinAndEmptyOnesClear) {
  UnitMarkers m;
  ApplyUnitFile(
      "[Unit]\nX-Schedwatch-Role=a\nX-Schedwatch-Role=b\nX-Schedwatch-Spec-Version=1\n"
      "[Timer]\nOnCalendar=daily\n",
      "a.timer", m);
  EXPECT_EQ(m.role, "b");  // duplicate keys: the last, as systemd
  ApplyUnitFile("[Unit]\nX-Schedwatch-Spec-Version=2\n[Timer]\nOnCalendar=\nOnCalendar=weekly\n",
                "a.timer.d/override.conf", m);
  EXPECT_EQ(m.role, "b");
  EXPECT_EQ(m.spec_version, "2");
  EXPECT_EQ(m.on_calendar, std::vector<std::string>{"weekly"});
  ApplyUnitFile("[Unit]\nX-Schedwatch-Role=\n", "a.timer.d/off.conf", m);
  EXPECT_EQ(m.role, "");
}

TEST(UnitMarkers, HostileValuesAreErrorsThatShowNoContent) {
  static const char kBinary[] = "[Unit]\nX-Schedwatch-Role=a\0b\n";
  auto binary = Parse(std::string(kBinary, sizeof kBinary - 1));
  EXPECT_EQ(binary.error, "a.timer is not a text file");
  auto bad_role = Parse("[Unit]\nX-Schedwatch-Role=root:x:0:0:secret\n");
  EXPECT_NE(bad_role.error.find("a.timer:2: X-Schedwatch-Role is not a role name"),
            std::string::npos);
  EXPECT_EQ(bad_role.error.find("secret"), std::string::npos);
  auto control = Parse("[Unit]\nX-Schedwatch-Spec-Version=1\x1b[2J\n");
  EXPECT_NE(control.error.find("not a printable value"), std::string::npos);
  auto long_value = Parse("[Unit]\nX-Schedwatch-Spec-Version=" + std::string(300, '7') + "\n");
  EXPECT_NE(long_value.error.find("at most 256 bytes"), std::string::npos);
  // A megabyte of continuation lines is one logical line, read in linear time.
  auto continued = Parse("[Unit]\nX-Schedwatch-Role=a\\\n" + std::string(1 << 20, '\\') + "\n");
  EXPECT_FALSE(continued.error.empty());
}

class UnitFilesOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/unit-markers-XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return "/" + name;
  }
  std::string dir_;
};

TEST_F(UnitFilesOnDisk, MainFileThenDropIns) {
  auto main = Write("a.timer", "[Unit]\nX-Schedwatch-Role=a\nX-Schedwatch-Spec-Version=1\n");
  auto dropin = Write("override.conf", "[Unit]\nX-Schedwatch-Spec-Version=2\n");
  auto m = ReadUnitMarkers(dir_, {main, dropin});
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.role, "a");
  EXPECT_EQ(m.spec_version, "2");
}

TEST_F(UnitFilesOnDisk, HugeFifoAndDevNullFiles) {
  auto huge = Write("huge.timer", "[Unit]\nX-Schedwatch-Role=a\n" + std::string(2 << 20, '#'));
  auto m = ReadUnitMarkers(dir_, {huge});
  EXPECT_NE(m.error.find("huge.timer"), std::string::npos) << m.error;
  EXPECT_EQ(m.role, "");
  ASSERT_EQ(mkfifo((dir_ + "/fifo.timer").c_str(), 0644), 0);
  m = ReadUnitMarkers(dir_, {"/fifo.timer"});
  EXPECT_NE(m.error.find("FIFO"), std::string::npos) << m.error;
  // A masked unit's link to /dev/null holds no markers and is no error.
  ASSERT_EQ(symlink("/dev/null", (dir_ + "/masked.timer").c_str()), 0);
  m = ReadUnitMarkers("", {dir_ + "/masked.timer"});
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.role, "");
  m = ReadUnitMarkers("", {"relative.timer"});
  EXPECT_NE(m.error.find("not absolute"), std::string::npos);
}

TEST_F(UnitFilesOnDisk, LinksResolveInsideTheRootAsTheContainerSeesThem) {
  // /etc/a.timer -> /lib/a.timer means the root's /lib, not the host's.
  ASSERT_EQ(mkdir((dir_ + "/lib").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir_ + "/etc").c_str(), 0755), 0);
  Write("lib/a.timer", "[Unit]\nX-Schedwatch-Role=inside\n");
  ASSERT_EQ(symlink("/lib/a.timer", (dir_ + "/etc/a.timer").c_str()), 0);
  auto m = ReadUnitMarkers(dir_, {"/etc/a.timer"});
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.role, "inside");
  // ".." stops at the root: no way out to the host's files.
  ASSERT_EQ(symlink("../../../../../../etc/hostname", (dir_ + "/etc/b.timer").c_str()), 0);
  m = ReadUnitMarkers(dir_, {"/etc/b.timer"});
  EXPECT_NE(m.error.find("No such file"), std::string::npos) << m.error;
}

}  // namespace
}  // namespace schedwatch::systemd
