#include "exporter/exposition/chunked_text.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <set>
#include <string>
#include <vector>

#include "tests/exporter/exposition/gunzip.h"

namespace schedwatch {
namespace {

using testing::Gunzip;
using testing::InflateChunk;

std::vector<std::string> Lines(int count, int changed = -1) {
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) {
    lines.push_back("schedwatch_job_condition{role=\"job-" + std::to_string(i) +
                    "\",source=\"cron\",condition=\"ok\"} " + (i == changed ? "0" : "1") + "\n");
  }
  return lines;
}

ChunkedText Write(const std::vector<std::string>& lines, const ChunkedText* previous,
                  std::size_t* shared = nullptr, ChunkBounds bounds = {}) {
  ChunkedTextWriter writer(previous, bounds);
  for (const auto& line : lines) {
    writer.buffer() += line;
    writer.EndOfLine();
  }
  ChunkedText text = writer.Finish();
  if (shared != nullptr) *shared = writer.shared_chunks();
  return text;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line;
  return text;
}

// The whole body a reader gives, read `step` bytes at a time; -1 ends it early.
std::string ReadAll(ChunkedTextReader& reader, std::size_t step) {
  std::string out;
  std::string buffer(step, '\0');
  for (;;) {
    std::ptrdiff_t got = reader.Read(buffer.data(), buffer.size());
    EXPECT_GE(got, 0);
    if (got <= 0) return out;
    out.append(buffer.data(), static_cast<std::size_t>(got));
  }
}

// The gzip answer as the web server sends it.
std::string Gzipped(const ChunkedText& text, const std::string& tail) {
  ChunkedTextReader reader(text, tail, true);
  EXPECT_TRUE(reader.gzip());
  std::string body = ReadAll(reader, 32 * 1024);
  EXPECT_EQ(body.size(), reader.size());
  return body;
}

std::set<const TextChunk*> ChunkSet(const ChunkedText& text) {
  std::set<const TextChunk*> chunks;
  for (const auto& chunk : text.chunks()) chunks.insert(chunk.get());
  return chunks;
}

TEST(ChunkedTextTest, ChunksHoldWholeLinesAndMakeTheText) {
  auto lines = Lines(60000);
  ChunkedText text = Write(lines, nullptr);
  EXPECT_GT(text.chunks().size(), 10u);
  for (const auto& chunk : text.chunks()) {
    EXPECT_TRUE(chunk->text.empty()) << "only the deflate is kept";
    std::string lines = InflateChunk(*chunk);
    ASSERT_EQ(lines.size(), chunk->size);
    EXPECT_EQ(lines.back(), '\n');
  }
  EXPECT_EQ(text.str(), Joined(lines));
  EXPECT_EQ(text.size(), Joined(lines).size());
  EXPECT_NE(text.find("role=\"job-19999\""), std::string::npos);
}

TEST(ChunkedTextTest, GzipOfTheChunksAndATailIsOneMember) {
  auto lines = Lines(60000);
  ChunkedText text = Write(lines, nullptr);
  ASSERT_TRUE(text.gzip().has_value());
  std::string tail = "process_open_fds 12\n";
  std::string gzipped = Gzipped(text, tail);
  EXPECT_LT(gzipped.size(), text.size() / 5);
  EXPECT_EQ(Gunzip(gzipped), Joined(lines) + tail);

  ChunkedText empty = Write({}, nullptr);
  EXPECT_EQ(Gunzip(Gzipped(empty, tail)), tail);
}

TEST(ChunkedTextTest, UnchangedChunksAreSharedWithThePreviousText) {
  auto lines = Lines(60000);
  ChunkedText first = Write(lines, nullptr);
  std::size_t shared = 0;
  ChunkedText same = Write(lines, &first, &shared);
  EXPECT_EQ(shared, first.chunks().size());
  EXPECT_EQ(ChunkSet(same), ChunkSet(first));

  // One value changed: one chunk is new, the rest are the previous text's.
  ChunkedText changed = Write(Lines(60000, 12345), &first, &shared);
  EXPECT_EQ(changed.str(), Joined(Lines(60000, 12345)));
  EXPECT_EQ(shared, first.chunks().size() - 1);
  EXPECT_EQ(Gunzip(Gzipped(changed, "")), changed.str());
}

// The OpenMetrics form of a refresh shares the text form's equal chunks: a `# UNIT` line near
// the start and `_created` lines at the end leave the chunks between them shared.
TEST(ChunkedTextTest, AnotherFormSharesTheChunksItHasTheSame) {
  auto lines = Lines(60000);
  ChunkedText text = Write(lines, nullptr);
  lines.insert(lines.begin() + 10, "# UNIT schedwatch_job_period_seconds seconds\n");
  for (int i = 0; i < 100; ++i) lines.push_back("schedwatch_job_runs_created 1.7e9\n");
  ChunkedTextWriter writer(nullptr);
  writer.ShareWith(text);
  for (const auto& line : lines) {
    writer.buffer() += line;
    writer.EndOfLine();
  }
  ChunkedText other = writer.Finish();
  EXPECT_EQ(other.str(), Joined(lines));
  EXPECT_EQ(Gunzip(Gzipped(other, "# EOF\n")), Joined(lines) + "# EOF\n");
  EXPECT_GE(writer.shared_chunks() + 3, text.chunks().size());
}

TEST(ChunkedTextTest, ALineAddedNearTheStartDoesNotShiftLaterChunks) {
  auto lines = Lines(60000);
  ChunkedText first = Write(lines, nullptr);
  lines.insert(lines.begin() + 10, "schedwatch_job_condition{role=\"new\"} 1\n");
  std::size_t shared = 0;
  ChunkedText inserted = Write(lines, &first, &shared);
  EXPECT_EQ(inserted.str(), Joined(lines));
  // Chunk ends are chosen by content: after the changed chunk they fall where they fell.
  EXPECT_GE(shared + 2, first.chunks().size());
}

TEST(ChunkedTextTest, PlainAndGzipBodiesAreWholeInAnyBufferSize) {
  auto lines = Lines(20000);
  ChunkedText text = Write(lines, nullptr);
  ASSERT_GT(text.chunks().size(), 3u);
  const std::string tail = "process_open_fds 12\n";
  for (std::size_t step : {1u, 7u, 4096u, 32768u, 1u << 22}) {
    SCOPED_TRACE(step);
    ChunkedTextReader plain(text, tail, false);
    EXPECT_FALSE(plain.gzip());
    std::string body = ReadAll(plain, step);
    EXPECT_EQ(body.size(), plain.size());
    EXPECT_EQ(body, Joined(lines) + tail);

    ChunkedTextReader gzip(text, tail, true);
    std::string gzipped = ReadAll(gzip, step);
    EXPECT_EQ(gzipped.size(), gzip.size());
    EXPECT_EQ(Gunzip(gzipped), Joined(lines) + tail);
  }
}

// Thousands of chunks (one line each here) read through, as a scrape at 100,000 roles does.
TEST(ChunkedTextTest, ThousandsOfChunksReadWhole) {
  auto lines = Lines(5000);
  ChunkedText text = Write(lines, nullptr, nullptr, ChunkBounds{1, 1});
  ASSERT_EQ(text.chunks().size(), 5000u);
  ChunkedTextReader plain(text, "", false);
  EXPECT_EQ(ReadAll(plain, 1000), Joined(lines));
  EXPECT_EQ(Gunzip(Gzipped(text, "")), Joined(lines));
}

TEST(ChunkedTextTest, NoGzipFormWhenGzipIsNotAskedFor) {
  ChunkedText text = Write(Lines(10), nullptr);
  ChunkedTextReader reader(text, "x 1\n", false);
  EXPECT_FALSE(reader.gzip());
  EXPECT_EQ(reader.size(), text.size() + 4);
}

}  // namespace
}  // namespace schedwatch
