// The exposition text of a refresh in chunks of whole lines, each with its own gzip-ready deflate.
// A chunk whose bytes equal a chunk of the previous refresh's text is that chunk, shared: most of
// an exposition (the desired set, thresholds, conditions) is the same from one refresh to the
// next, so two refreshes in memory at once (the one scrapes still read and the one being
// rendered) cost about one copy of the text, and only changed chunks are compressed again.
// Chunk ends are chosen by content (a line whose hash has its low bits zero, between a least and
// a most size), so a line added or removed shifts no later boundary and sharing resumes after it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exporter/gzip.h"

namespace schedwatch {

struct TextChunk {
  std::string text;       // whole lines
  std::string deflated;   // raw deflate of text ended by a full flush; empty when zlib failed
  std::uint32_t crc = 0;  // CRC-32 of text
};

class ChunkedText {
 public:
  using Chunk = std::shared_ptr<const TextChunk>;

  const std::vector<Chunk>& chunks() const { return chunks_; }
  std::size_t size() const { return size_; }
  // The gzip member of the text up to (not including) its final block, for GzipFinish; nullopt
  // when some chunk could not be compressed. Its `bytes` hold the gzip header only: the
  // chunks' `deflated` follow it.
  const std::optional<GzipPrefix>& gzip() const { return gzip_; }

  // The whole text in one string: for tests and small readers, not for serving.
  std::string str() const;
  operator std::string() const { return str(); }  // NOLINT: tests read it as the text it is
  std::size_t find(std::string_view text) const { return str().find(text); }

 private:
  friend class ChunkedTextWriter;
  std::vector<Chunk> chunks_;
  std::size_t size_ = 0;
  std::optional<GzipPrefix> gzip_;
};

// Writes a ChunkedText line by line: append a line to buffer(), then call EndOfLine().
class ChunkedTextWriter {
 public:
  // `previous`, when set, is the text whose equal chunks are shared.
  explicit ChunkedTextWriter(const ChunkedText* previous);
  ~ChunkedTextWriter();
  ChunkedTextWriter(const ChunkedTextWriter&) = delete;
  ChunkedTextWriter& operator=(const ChunkedTextWriter&) = delete;

  std::string& buffer() { return buffer_; }
  void EndOfLine();
  ChunkedText Finish();

  // Chunks shared with the previous text so far (for tests and benchmarks).
  std::size_t shared_chunks() const { return shared_; }

 private:
  void Seal();

  std::unordered_multimap<std::size_t, ChunkedText::Chunk> previous_;  // by hash of text
  std::string buffer_;
  std::size_t line_start_ = 0;
  ChunkedText text_;
  std::uint32_t crc_ = 0;
  bool gzip_ok_ = true;
  std::size_t shared_ = 0;
  struct Deflater;
  std::unique_ptr<Deflater> deflater_;
};

}  // namespace schedwatch
