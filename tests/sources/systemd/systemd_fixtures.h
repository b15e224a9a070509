// The fixtures captured from a real systemd 252 (fixtures/: manager.json from systemd_capture,
// the timers' unit files, `journalctl -o export` of their services), read for the tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sources/systemd/unit_journal.h"
#include "sources/systemd/unit_markers.h"
#include "sources/systemd/unit_properties.h"

namespace schedwatch::systemd::fixtures {

inline const std::string kDirectory =
    std::string(SCHEDWATCH_TEST_DIR) + "/sources/systemd/fixtures/";

// Where the fixture's monotonic clock was, in wall time: NextElapseUSecMonotonic + this.
constexpr std::int64_t kMonotonicToWall = 1796180000000000;

inline nlohmann::json LoadJson() {
  std::ifstream in(kDirectory + "manager.json");
  return nlohmann::json::parse(in);
}

inline ManagerReading Load(const nlohmann::json& json) {
  auto reading = ManagerReadingFromJson(json);
  EXPECT_TRUE(reading) << reading.error();
  return reading ? *reading : ManagerReading{};
}

// The markers of the fixture's timers, as their unit files (fixtures/units/) give them, and a
// drop-in that sets ok.timer's spec version.
inline std::map<std::string, UnitMarkers> Markers() {
  std::map<std::string, UnitMarkers> markers;
  for (const char* name : {"ok", "fail", "hung", "off", "masked", "mono"}) {
    std::ifstream in(kDirectory + "units/" + name + ".timer");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_FALSE(text.empty()) << name;
    ApplyUnitFile(text, name, markers[std::string(name) + ".timer"]);
  }
  ApplyUnitFile("[Unit]\nX-Schedwatch-Spec-Version=3\n", "override.conf", markers["ok.timer"]);
  return markers;
}

// Entries of `journalctl -o export` text (text fields only), in order.
inline std::vector<JournalEntry> ReadExport(const std::string& path,
                                            std::size_t* skipped = nullptr) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  std::vector<JournalEntry> out;
  std::vector<std::string> lines;
  auto flush = [&] {
    if (lines.empty()) return;
    std::vector<std::string_view> fields;
    std::uint64_t realtime = 0;
    for (const auto& line : lines) {
      if (line.rfind("__REALTIME_TIMESTAMP=", 0) == 0) realtime = std::stoull(line.substr(21));
      fields.emplace_back(line);
    }
    std::string why;
    if (auto entry = EntryFromFields(fields, realtime, &why)) {
      out.push_back(*entry);
    } else if (skipped != nullptr) {
      ++*skipped;
    }
    lines.clear();
  };
  std::istringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    if (line.empty()) {
      flush();
    } else if (line[0] != '#') {
      lines.push_back(line);
    }
  }
  flush();
  return out;
}

}  // namespace schedwatch::systemd::fixtures
