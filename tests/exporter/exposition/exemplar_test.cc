// OpenMetrics exemplars of a run: within the 128 characters their labels may hold, and never a
// value Prometheus would read back as another.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exporter/exposition/exposition.h"

namespace schedwatch {
namespace {

std::string Exemplar(const std::string& id, const std::string& url) {
  RunExemplar exemplar{std::make_shared<const RunIdentity>(RunIdentity{id, url}), 1796040000, 42};
  std::string out;
  AppendExemplar(out, exemplar, 1);
  return out;
}

TEST(ExemplarTest, IdAndUrlWithValueAndTimestamp) {
  EXPECT_EQ(Exemplar("8812", "https://ci.example.org/runs/8812"),
            R"( # {run_id="8812",run_url="https://ci.example.org/runs/8812"} 1 1796040000)");
  EXPECT_EQ(Exemplar("job-1", ""), R"( # {run_id="job-1"} 1 1796040000)");
  EXPECT_EQ(Exemplar("", "https://x"), "");
}

TEST(ExemplarTest, TheLimitCountsUtf8Characters) {
  // "run_id" + 122 characters is 128: fits; 123 does not, and a cut id would name another run.
  EXPECT_NE(Exemplar(std::string(122, 'r'), ""), "");
  EXPECT_EQ(Exemplar(std::string(123, 'r'), ""), "");
  std::string umlauts;
  for (int i = 0; i < 122; ++i) umlauts += "ü";  // 244 bytes, 122 characters
  EXPECT_NE(Exemplar(umlauts, ""), "");
  // The url fits to the character, else is left out (the id stays).
  std::string id(10, 'i');
  std::string url(128 - 6 - 10 - 7, 'u');
  EXPECT_NE(Exemplar(id, url).find("run_url"), std::string::npos);
  EXPECT_EQ(Exemplar(id, url + "u"), " # {run_id=\"" + id + "\"} 1 1796040000");
  std::string wide_url;
  for (std::size_t i = 0; i < url.size(); ++i) wide_url += "é";
  EXPECT_NE(Exemplar(id, wide_url).find("run_url"), std::string::npos);
}

TEST(ExemplarTest, WhatWouldNotReadBackIsLeftOut) {
  for (const std::string& id : std::vector<std::string>{
           "a\"b", "a\\b", "a\nb", "a\rb", std::string("a\0b", 3), "\x7f", "\xc3", "\xc3\x28",
           "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"}) {
    EXPECT_EQ(Exemplar(id, ""), "") << id;
    EXPECT_EQ(Exemplar("ok", id), R"( # {run_id="ok"} 1 1796040000)") << id;
  }
  EXPECT_EQ(Exemplar("läuft ✓ 𝄞", ""), R"( # {run_id="läuft ✓ 𝄞"} 1 1796040000)");
}

}  // namespace
}  // namespace schedwatch
