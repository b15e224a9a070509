#include "exporter/chunked_text.h"

#include <zlib.h>

#include <functional>

namespace schedwatch {
namespace {

// Chunk ends: at a line end once a chunk holds kLeastBytes and the line's hash has its low
// kCutMask bits zero (about one line in 64), and at the latest once it holds kMostBytes.
constexpr std::size_t kLeastBytes = 96 * 1024;
constexpr std::size_t kMostBytes = 512 * 1024;
constexpr std::size_t kCutMask = 63;

// RFC 1952 header: magic, deflate, no flags, no mtime, no extra flags, OS unix.
constexpr std::string_view kGzipHeader("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);

}  // namespace

// One deflate stream, reset for each chunk: every chunk is compressed on its own.
struct ChunkedTextWriter::Deflater {
  z_stream stream{};
  bool ok = false;
  Deflater() { ok = deflateInit2(&stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK; }
  ~Deflater() {
    if (ok) deflateEnd(&stream);
  }
  // Raw deflate of `text`, ended by a full flush; empty on failure.
  std::string Deflate(std::string_view text) {
    std::string out;
    if (!ok || deflateReset(&stream) != Z_OK) return out;
    out.resize(deflateBound(&stream, text.size()) + 16);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    stream.avail_in = static_cast<uInt>(text.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    int status = deflate(&stream, Z_FULL_FLUSH);
    if (status != Z_OK || stream.avail_in != 0) return {};
    out.resize(out.size() - stream.avail_out);
    out.shrink_to_fit();
    return out;
  }
};

std::string ChunkedText::str() const {
  std::string out;
  out.reserve(size_);
  for (const auto& chunk : chunks_) out += chunk->text;
  return out;
}

ChunkedTextWriter::ChunkedTextWriter(const ChunkedText* previous)
    : deflater_(std::make_unique<Deflater>()) {
  if (previous != nullptr) {
    for (const auto& chunk : previous->chunks()) {
      previous_.emplace(std::hash<std::string_view>()(chunk->text), chunk);
    }
  }
  buffer_.reserve(kMostBytes + 4096);
}

ChunkedTextWriter::~ChunkedTextWriter() = default;

void ChunkedTextWriter::EndOfLine() {
  if (buffer_.size() < kLeastBytes) {
    line_start_ = buffer_.size();
    return;
  }
  std::string_view line(buffer_.data() + line_start_, buffer_.size() - line_start_);
  if (buffer_.size() >= kMostBytes || (std::hash<std::string_view>()(line) & kCutMask) == 0) {
    Seal();
  } else {
    line_start_ = buffer_.size();
  }
}

void ChunkedTextWriter::Seal() {
  ChunkedText::Chunk chunk;
  auto [begin, end] = previous_.equal_range(std::hash<std::string_view>()(buffer_));
  for (auto it = begin; it != end; ++it) {
    if (it->second->text == buffer_) {
      chunk = it->second;
      ++shared_;
      break;
    }
  }
  if (!chunk) {
    auto made = std::make_shared<TextChunk>();
    made->text.assign(buffer_);  // exactly sized: the buffer keeps its room for the next chunk
    made->deflated = deflater_->Deflate(made->text);
    made->crc =
        static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(made->text.data()),
                                         static_cast<uInt>(made->text.size())));
    chunk = std::move(made);
  }
  if (chunk->deflated.empty()) gzip_ok_ = false;
  crc_ = static_cast<std::uint32_t>(
      crc32_combine(crc_, chunk->crc, static_cast<z_off_t>(chunk->text.size())));
  text_.size_ += chunk->text.size();
  text_.chunks_.push_back(std::move(chunk));
  buffer_.clear();
  line_start_ = 0;
}

ChunkedText ChunkedTextWriter::Finish() {
  if (!buffer_.empty()) Seal();
  buffer_ = std::string();
  previous_.clear();
  if (gzip_ok_ && deflater_->ok) {
    GzipPrefix prefix;
    prefix.bytes.assign(kGzipHeader);
    prefix.crc = crc_;
    prefix.size = text_.size_;
    text_.gzip_ = std::move(prefix);
  }
  return std::move(text_);
}

}  // namespace schedwatch
