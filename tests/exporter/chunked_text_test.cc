#include "exporter/chunked_text.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "tests/exporter/gunzip.h"

namespace schedwatch {
namespace {

using testing::Gunzip;

std::vector<std::string> Lines(int count, int changed = -1) {
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) {
    lines.push_back("schedwatch_job_condition{role=\"job-" + std::to_string(i) +
                    "\",source=\"cron\",condition=\"ok\"} " + (i == changed ? "0" : "1") + "\n");
  }
  return lines;
}

ChunkedText Write(const std::vector<std::string>& lines, const ChunkedText* previous,
                  std::size_t* shared = nullptr) {
  ChunkedTextWriter writer(previous);
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

// The gzip answer as the web server sends it: header, each chunk's deflate, the final part.
std::string Gzipped(const ChunkedText& text, const std::string& tail) {
  std::string out = text.gzip()->bytes;
  for (const auto& chunk : text.chunks()) out += chunk->deflated;
  return out + GzipFinish(*text.gzip(), tail);
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
    ASSERT_FALSE(chunk->text.empty());
    EXPECT_EQ(chunk->text.back(), '\n');
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

}  // namespace
}  // namespace schedwatch
