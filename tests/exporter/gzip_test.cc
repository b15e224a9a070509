#include "exporter/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

namespace schedwatch {
namespace {

// What any gzip reader (zlib with gzip framing, as Prometheus' and curl's) makes of `bytes`.
std::string Gunzip(const std::string& bytes) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 16), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char buffer[65536];
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - stream.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END) << "not one complete gzip member (CRC or length wrong?)";
  EXPECT_EQ(stream.avail_in, 0u) << "bytes after the member";
  inflateEnd(&stream);
  return out;
}

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
