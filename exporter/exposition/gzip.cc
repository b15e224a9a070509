#include "exporter/exposition/gzip.h"

#include <zlib.h>

namespace schedwatch {
namespace {

// Raw deflate of `text` appended to `out`, ended with `flush` (Z_FULL_FLUSH leaves the stream
// byte-aligned with no reference to what came before; Z_FINISH writes the final block).
bool Deflate(std::string_view text, int flush, std::string& out) {
  z_stream stream{};
  if (deflateInit2(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
  std::size_t start = out.size();
  out.resize(start + deflateBound(&stream, text.size()) + 16);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data() + start);
  stream.avail_out = static_cast<uInt>(out.size() - start);
  int status = deflate(&stream, flush);
  out.resize(start + stream.total_out);
  deflateEnd(&stream);
  return flush == Z_FINISH ? status == Z_STREAM_END : status == Z_OK && stream.avail_in == 0;
}

void PutLittleEndian32(std::uint32_t value, std::string& out) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

}  // namespace

GzipPrefix GzipStart(std::string_view text) {
  GzipPrefix prefix;
  // RFC 1952 header: magic, deflate, no flags, no mtime, no extra flags, OS unix.
  prefix.bytes.assign("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  if (!Deflate(text, Z_FULL_FLUSH, prefix.bytes)) return {};
  prefix.bytes.shrink_to_fit();  // deflateBound is about the size of the input
  prefix.crc = static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
  prefix.size = text.size();
  return prefix;
}

std::string GzipFinish(const GzipPrefix& prefix, std::string_view tail) {
  std::string out;
  if (!Deflate(tail, Z_FINISH, out)) return {};
  uLong tail_crc =
      crc32(0, reinterpret_cast<const Bytef*>(tail.data()), static_cast<uInt>(tail.size()));
  PutLittleEndian32(static_cast<std::uint32_t>(
                        crc32_combine(prefix.crc, tail_crc, static_cast<z_off_t>(tail.size()))),
                    out);
  PutLittleEndian32(static_cast<std::uint32_t>(prefix.size + tail.size()), out);  // mod 2^32
  return out;
}

}  // namespace schedwatch
