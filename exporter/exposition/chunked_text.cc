#include "exporter/exposition/chunked_text.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <functional>

namespace schedwatch {
namespace {

constexpr std::size_t kCutMask = 63;

// RFC 1952 header: magic, deflate, no flags, no mtime, no extra flags, OS unix.
constexpr std::string_view kGzipHeader("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);

std::size_t Digest(std::string_view text) { return std::hash<std::string_view>()(text); }

std::uint32_t Crc(std::string_view text) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

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

// One raw inflate stream over the chunks in order: each chunk's deflate starts afresh and ends
// byte-aligned, so their concatenation is one stream.
struct ChunkedTextReader::Inflater {
  z_stream stream{};
  bool ok = false;
  Inflater() { ok = inflateInit2(&stream, -15) == Z_OK; }
  ~Inflater() {
    if (ok) inflateEnd(&stream);
  }
};

std::string ChunkedText::str() const {
  std::string out;
  out.resize(size_);
  ChunkedTextReader reader(*this, {}, false);
  std::size_t done = 0;
  while (done < out.size()) {
    std::ptrdiff_t got = reader.Read(out.data() + done, out.size() - done);
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  out.resize(done);
  return out;
}

ChunkedTextWriter::ChunkedTextWriter(const ChunkedText* previous, ChunkBounds bounds)
    : bounds_(bounds), previous_text_(previous), deflater_(std::make_unique<Deflater>()) {
  if (previous != nullptr) ShareWith(*previous);
  buffer_.reserve(bounds_.most + 4096);
}

void ChunkedTextWriter::ShareWith(const ChunkedText& other) {
  for (const auto& chunk : other.chunks()) previous_.emplace(chunk->digest, chunk);
}

ChunkedTextWriter::~ChunkedTextWriter() = default;

void ChunkedTextWriter::Item(std::uint32_t family, std::uint32_t item) {
  current_ = {family, item, 0};
  skip_ = resume_ && resume_->family == family && resume_->item == item ? resume_->line : 0;
  resume_.reset();
  if (buffer_.empty()) {
    open_start_ = {family, item, skip_};
    tainted_ = false;
  } else if (family != open_start_.family) {
    tainted_ = true;
  }
}

void ChunkedTextWriter::EndOfItems() {
  current_ = {};
  tainted_ = true;
}

std::optional<TextPosition> ChunkedTextWriter::OpenStart() const {
  if (tainted_ || buffer_.empty() || open_start_.family == TextPosition::kNoFamily) {
    return std::nullopt;
  }
  return open_start_;
}

const ChunkSpan* ChunkedTextWriter::PreviousChunk(const TextPosition& start) const {
  if (previous_text_ == nullptr) return nullptr;
  // Spans start in text order, items numbered in the order they were written.
  const auto& spans = previous_text_->spans();
  auto it = std::lower_bound(
      spans.begin(), spans.end(), start,
      [](const ChunkSpan& span, const TextPosition& at) { return span.start < at; });
  return it != spans.end() && it->start == start && it->reusable ? &*it : nullptr;
}

std::uint32_t ChunkedTextWriter::Reuse(const ChunkSpan& span) {
  const std::size_t index = static_cast<std::size_t>(&span - previous_text_->spans().data());
  // The chunk's end, numbered here: items before its start may have come or gone.
  current_ = {span.end.family, open_start_.item + (span.end.item - span.start.item), span.end.line};
  resume_ = current_;
  ++shared_;
  ++reused_;
  Append(previous_text_->chunks()[index], true);
  return current_.item;
}

void ChunkedTextWriter::EndOfLine() {
  ++current_.line;
  if (skip_ > 0) {  // a line of a reused chunk, written again
    --skip_;
    buffer_.resize(line_start_);
    return;
  }
  if (buffer_.size() < bounds_.least) {
    line_start_ = buffer_.size();
    return;
  }
  std::string_view line(buffer_.data() + line_start_, buffer_.size() - line_start_);
  if (buffer_.size() >= bounds_.most || (Digest(line) & kCutMask) == 0) {
    Seal();
  } else {
    line_start_ = buffer_.size();
  }
}

void ChunkedTextWriter::Seal() {
  ChunkedText::Chunk chunk;
  const std::size_t digest = Digest(buffer_);
  const std::uint32_t crc = Crc(buffer_);
  // The text of the previous chunks is gone: equal means equal hash, CRC-32 and length (96
  // bits of agreement over at most a few thousand chunks).
  auto [begin, end] = previous_.equal_range(digest);
  for (auto it = begin; it != end; ++it) {
    if (it->second->crc == crc && it->second->size == buffer_.size()) {
      chunk = it->second;
      ++shared_;
      break;
    }
  }
  if (!chunk) {
    auto made = std::make_shared<TextChunk>();
    made->deflated = deflater_->Deflate(buffer_);
    if (made->deflated.empty()) made->text.assign(buffer_);  // served plain, never lost
    made->crc = crc;
    made->size = buffer_.size();
    made->digest = digest;
    chunk = std::move(made);
  }
  Append(std::move(chunk), !tainted_);
}

void ChunkedTextWriter::Append(ChunkedText::Chunk chunk, bool reusable) {
  if (chunk->deflated.empty()) gzip_ok_ = false;
  crc_ = static_cast<std::uint32_t>(
      crc32_combine(crc_, chunk->crc, static_cast<z_off_t>(chunk->size)));
  text_.size_ += chunk->size;
  text_.chunks_.push_back(std::move(chunk));
  text_.spans_.push_back(
      {open_start_, current_, reusable && open_start_.family == current_.family});
  buffer_.clear();
  line_start_ = 0;
  open_start_ = current_;
  tainted_ = current_.family == TextPosition::kNoFamily;
}

ChunkedText ChunkedTextWriter::Finish() {
  if (!buffer_.empty()) {
    Seal();
    text_.spans_.back().reusable = false;  // ended by the end of the text, not by a cut
  }
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

ChunkedTextReader::ChunkedTextReader(const ChunkedText& text, std::string_view tail, bool gzip)
    : text_(text), gzip_(gzip && text.gzip().has_value()) {
  if (gzip_) {
    head_ = text.gzip()->bytes;
    tail_ = GzipFinish(*text.gzip(), tail);
    ok_ = !tail_.empty();
    size_ = head_.size() + tail_.size();
    for (const auto& chunk : text.chunks()) size_ += chunk->deflated.size();
    return;
  }
  tail_.assign(tail);
  size_ = text.size() + tail_.size();
  inflater_ = std::make_unique<Inflater>();
  ok_ = inflater_->ok;
}

ChunkedTextReader::~ChunkedTextReader() = default;

bool ChunkedTextReader::ReadPlainChunk(char*& out, std::size_t& capacity) {
  const TextChunk& chunk = *text_.chunks()[part_ - 1];
  z_stream& stream = inflater_->stream;
  if (offset_ == 0) {
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(chunk.deflated.data()));
    stream.avail_in = static_cast<uInt>(chunk.deflated.size());
  }
  while (capacity > 0) {
    stream.next_out = reinterpret_cast<Bytef*>(out);
    stream.avail_out = static_cast<uInt>(std::min<std::size_t>(capacity, 1u << 30));
    const uInt offered = stream.avail_out;
    const uInt input = stream.avail_in;
    int status = inflate(&stream, Z_SYNC_FLUSH);
    std::size_t produced = offered - stream.avail_out;
    out += produced;
    capacity -= produced;
    offset_ += produced;
    if ((status != Z_OK && status != Z_BUF_ERROR) || offset_ > chunk.size) return false;
    if (stream.avail_out == 0) return true;  // the buffer is full: go on at the next Read
    // Room left, so inflate stopped for want of input: the chunk ends here.
    if (stream.avail_in != 0 && produced == 0 && stream.avail_in == input) return false;
    if (stream.avail_in == 0) {
      if (offset_ != chunk.size) return false;
      ++part_;
      offset_ = 0;
      return true;
    }
  }
  return true;
}

std::ptrdiff_t ChunkedTextReader::Read(char* out, std::size_t capacity) {
  if (!ok_) return -1;
  char* const start = out;
  const std::size_t chunks = text_.chunks().size();
  while (capacity > 0 && part_ <= chunks + 1) {
    if (part_ >= 1 && part_ <= chunks && !gzip_ && !text_.chunks()[part_ - 1]->deflated.empty()) {
      if (!ReadPlainChunk(out, capacity)) {
        ok_ = false;
        return -1;
      }
      continue;
    }
    std::string_view bytes = part_ == 0       ? std::string_view(head_)
                             : part_ > chunks ? std::string_view(tail_)
                             : gzip_          ? text_.chunks()[part_ - 1]->deflated
                                              : text_.chunks()[part_ - 1]->text;
    std::size_t count = std::min(capacity, bytes.size() - offset_);
    std::memcpy(out, bytes.data() + offset_, count);
    out += count;
    capacity -= count;
    offset_ += count;
    if (offset_ == bytes.size()) {
      ++part_;
      offset_ = 0;
    }
  }
  return out - start;
}

}  // namespace schedwatch
