// What any gzip reader (zlib with gzip framing, as Prometheus' and curl's) makes of `bytes`.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "exporter/exposition/chunked_text.h"

namespace schedwatch::testing {

inline std::string Gunzip(const std::string& bytes) {
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

// One chunk's deflate on its own, inflated.
inline std::string InflateChunk(const TextChunk& chunk) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, -15), Z_OK);
  std::string out(chunk.size + 1, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.deflated.data()));
  stream.avail_in = static_cast<uInt>(chunk.deflated.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&stream, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(stream.avail_in, 0u);
  out.resize(out.size() - stream.avail_out);
  inflateEnd(&stream);
  return out;
}

}  // namespace schedwatch::testing
