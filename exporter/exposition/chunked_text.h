// The exposition text of a refresh in chunks of whole lines, each kept only as its own raw
// deflate: at 100,000 roles the text is about 170 MB and its deflate about 7.5 MB, so the text
// itself is never held. A gzip scrape sends the deflates as they are; a plain one inflates them
// as it sends (ChunkedTextReader).
// A chunk whose text equals a chunk of the previous refresh's text is that chunk, shared: most of
// an exposition (the desired set, thresholds, conditions) is the same from one refresh to the
// next, so only changed chunks are compressed again and two refreshes in memory at once cost
// about one. Chunk ends are chosen by content (a line whose hash has its low bits zero, between a
// least and a most size), so a line added or removed shifts no later boundary and sharing resumes
// after it.
// Written item by item (a role's series of one family), a chunk of the previous text whose items
// are all unchanged is reused without its lines being written, hashed or compressed again: when
// little changed, a refresh writes only the chunks around what did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "exporter/exposition/gzip.h"

namespace schedwatch {

struct TextChunk {
  // Raw deflate of the chunk's lines ended by a full flush, so chunks concatenate into one
  // stream. Empty only when zlib failed; `text` then holds the lines.
  std::string deflated;
  std::string text;
  std::uint32_t crc = 0;   // CRC-32 of the lines
  std::size_t size = 0;    // of the lines
  std::size_t digest = 0;  // hash of the lines: with crc and size, how an equal chunk is found
};

// Where a line stands in an exposition written item by item (ChunkedTextWriter::Item): line
// `line` of item `item` (a role's series of one metric family) of family `family`.
struct TextPosition {
  // A line of no item (self metrics); numbered after every family.
  static constexpr std::uint32_t kNoFamily = UINT32_MAX;
  std::uint32_t family = kNoFamily;
  std::uint32_t item = 0;
  std::uint32_t line = 0;
  bool operator==(const TextPosition& other) const {
    return family == other.family && item == other.item && line == other.line;
  }
  bool operator<(const TextPosition& other) const {
    return family != other.family ? family < other.family
           : item != other.item   ? item < other.item
                                  : line < other.line;
  }
};

// Which lines a chunk holds: from `start` up to (not including) `end`, both of one family. A
// reusable chunk holds lines of that family's items only and was ended by a cut, not by the end
// of the text: the same items written again from `start` make the same chunk, ended at the same
// place, as chunk ends depend on the chunk's lines only.
struct ChunkSpan {
  TextPosition start, end;
  bool reusable = false;
};

// Where chunks end: at a line end once a chunk holds `least` bytes and the line's hash has its
// low bits zero (about one line in 64), and at the latest once it holds `most`.
struct ChunkBounds {
  std::size_t least = 96 * 1024;
  std::size_t most = 512 * 1024;
};

class ChunkedText {
 public:
  using Chunk = std::shared_ptr<const TextChunk>;

  const std::vector<Chunk>& chunks() const { return chunks_; }
  // One per chunk: which items' lines it holds.
  const std::vector<ChunkSpan>& spans() const { return spans_; }
  std::size_t size() const { return size_; }
  // The gzip member of the text up to (not including) its final block, for GzipFinish; nullopt
  // when some chunk could not be compressed. Its `bytes` hold the gzip header only: the
  // chunks' `deflated` follow it.
  const std::optional<GzipPrefix>& gzip() const { return gzip_; }

  // The whole text in one string, inflated: for tests and small readers, never for serving.
  std::string str() const;
  operator std::string() const { return str(); }  // NOLINT: tests read it as the text it is
  std::size_t find(std::string_view text) const { return str().find(text); }

 private:
  friend class ChunkedTextWriter;
  std::vector<Chunk> chunks_;
  std::vector<ChunkSpan> spans_;
  std::size_t size_ = 0;
  std::optional<GzipPrefix> gzip_;
};

// Writes a ChunkedText line by line: append a line to buffer(), then call EndOfLine().
class ChunkedTextWriter {
 public:
  // `previous`, when set, is the text whose equal chunks are shared.
  explicit ChunkedTextWriter(const ChunkedText* previous, ChunkBounds bounds = {});
  ~ChunkedTextWriter();
  ChunkedTextWriter(const ChunkedTextWriter&) = delete;
  ChunkedTextWriter& operator=(const ChunkedTextWriter&) = delete;

  // Shares equal chunks with `other` too (another form of the same refresh: most of its lines
  // are the same). `other` must be finished.
  void ShareWith(const ChunkedText& other);

  std::string& buffer() { return buffer_; }
  void EndOfLine();
  ChunkedText Finish();

  // Item by item: the lines written next are item `item`'s of family `family` (families and
  // items numbered in the order they are written), until the next call.
  void Item(std::uint32_t family, std::uint32_t item);
  // The open chunk holds a line that depends on more than its item (a family's header).
  void Taint() { tainted_ = true; }
  // The lines written next belong to no item.
  void EndOfItems();
  // Where the open chunk starts, when it holds lines of one family's items only (and some).
  std::optional<TextPosition> OpenStart() const;
  // The previous text's reusable chunk starting at `start` (a position in that text), if any.
  const ChunkSpan* PreviousChunk(const TextPosition& start) const;
  // Replaces the open chunk by the previous text's chunk of `span`, which starts where the open
  // chunk does (`span.start` there, OpenStart() here): the caller found the items it spans
  // unchanged. Returns the item (numbered here) its last line belongs to: write that item
  // again, from the start; its lines the chunk holds are dropped.
  std::uint32_t Reuse(const ChunkSpan& span);

  // Chunks shared with the previous text so far (for tests and benchmarks).
  std::size_t shared_chunks() const { return shared_; }
  // Of those, chunks reused without writing their lines (Reuse).
  std::size_t reused_chunks() const { return reused_; }

 private:
  void Seal();
  void Append(ChunkedText::Chunk chunk, bool reusable);

  ChunkBounds bounds_;
  std::unordered_multimap<std::size_t, ChunkedText::Chunk> previous_;  // by digest
  const ChunkedText* previous_text_ = nullptr;
  std::string buffer_;
  std::size_t line_start_ = 0;
  ChunkedText text_;
  std::uint32_t crc_ = 0;
  bool gzip_ok_ = true;
  std::size_t shared_ = 0;
  std::size_t reused_ = 0;
  // Item by item: where the next line stands, where the open chunk started and whether it can be
  // reused; lines of `current_`'s item still to drop (the reused chunk holds them).
  TextPosition current_, open_start_;
  bool tainted_ = true;
  std::uint32_t skip_ = 0;
  std::optional<TextPosition> resume_;  // set by Reuse: the item written again, and lines to drop
  struct Deflater;
  std::unique_ptr<Deflater> deflater_;
};

// Reads a ChunkedText and a tail (the lines a scrape adds) as one body, as a gzip member or as
// plain text, into buffers of whatever size the server offers. The text must outlive the reader.
class ChunkedTextReader {
 public:
  // Gzip only when `text.gzip()` is set; `tail` is plain text either way.
  ChunkedTextReader(const ChunkedText& text, std::string_view tail, bool gzip);
  ~ChunkedTextReader();
  ChunkedTextReader(const ChunkedTextReader&) = delete;
  ChunkedTextReader& operator=(const ChunkedTextReader&) = delete;

  // False when the body cannot be made (zlib failed): answer otherwise.
  bool ok() const { return ok_; }
  // Whether the body is a gzip member (asked for, and the text has its gzip form).
  bool gzip() const { return gzip_; }
  // The body's exact length, known before a byte is read: the Content-Length.
  std::uint64_t size() const { return size_; }
  // Copies up to `capacity` next bytes of the body into `out`: the count, 0 at the end, or -1
  // when a chunk does not inflate to the length it was written with (the body must be cut,
  // never sent short under its Content-Length).
  std::ptrdiff_t Read(char* out, std::size_t capacity);

 private:
  bool ReadPlainChunk(char*& out, std::size_t& capacity);

  const ChunkedText& text_;
  const bool gzip_;
  bool ok_ = true;
  std::string head_;  // gzip: the header; plain: empty
  std::string tail_;  // gzip: the tail's final deflate blocks and the trailer; plain: the tail
  std::uint64_t size_ = 0;
  // Position: a part (head, each chunk, tail) and the bytes of it already read.
  std::size_t part_ = 0;
  std::size_t offset_ = 0;
  struct Inflater;
  std::unique_ptr<Inflater> inflater_;  // plain only
};

}  // namespace schedwatch
