#include "exporter/exposition/gzip.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/exporter/exposition/gunzip.h"

namespace schedwatch {
namespace {

using testing::Gunzip;

TEST(GzipTest, PrefixAndTailMakeOneMember) {
  std::string body;
  for (int i = 0; i < 20000; ++i)
    body += "schedwatch_job_info{role=\"r" + std::to_string(i) + "\"} 1\n";
  std::string tail = "process_cpu_seconds_total 1.25\nprocess_open_fds 12\n";
  GzipPrefix prefix = GzipStart(body);
  ASSERT_FALSE(prefix.bytes.empty());
  EXPECT_LT(prefix.bytes.size(), body.size() / 5);
  EXPECT_EQ(Gunzip(prefix.bytes + GzipFinish(prefix, tail)), body + tail);
  // Each scrape finishes the same prefix with its own tail.
  EXPECT_EQ(Gunzip(prefix.bytes + GzipFinish(prefix, "x 2\n")), body + "x 2\n");
}

TEST(GzipTest, EmptyPartsAndIncompressibleData) {
  GzipPrefix empty = GzipStart("");
  EXPECT_EQ(Gunzip(empty.bytes + GzipFinish(empty, "")), "");
  EXPECT_EQ(Gunzip(empty.bytes + GzipFinish(empty, "a 1\n")), "a 1\n");
  std::mt19937 random(42);
  std::string noise(300000, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  GzipPrefix prefix = GzipStart(noise);
  EXPECT_EQ(Gunzip(prefix.bytes + GzipFinish(prefix, noise.substr(0, 1000))),
            noise + noise.substr(0, 1000));
}

}  // namespace
}  // namespace schedwatch
