// gzip for /metrics in two parts: the exposition of a refresh is compressed once, and the few
// lines read at scrape time (the process_* metrics) are compressed per scrape and appended
// without compressing the large part again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace schedwatch {

// A gzip member without its end: header and deflate blocks of `text`, ended by a full flush so
// that further blocks can follow, plus what the trailer will need.
struct GzipPrefix {
  std::string bytes;  // empty when compression failed
  std::uint32_t crc = 0;
  std::size_t size = 0;  // of the uncompressed text
};

GzipPrefix GzipStart(std::string_view text);

// The bytes that follow `prefix.bytes` to make one gzip member of prefix text + `tail`: the
// tail's final deflate blocks and the trailer (CRC-32 and length of the whole).
std::string GzipFinish(const GzipPrefix& prefix, std::string_view tail);

}  // namespace schedwatch
