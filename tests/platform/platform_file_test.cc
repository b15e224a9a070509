// The capped reader of files from outside: only regular files, never more than the limit, never
// blocking, and stopping when the caller gives up.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "schedwatch/platform/file.h"

namespace schedwatch::platform {
namespace {

namespace fs = std::filesystem;

class PlatformFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "schedwatch-file-XXXXXX").string();
    directory_ = mkdtemp(pattern.data());
  }
  void TearDown() override { fs::remove_all(directory_); }
  std::string Path(const std::string& name) const { return (directory_ / name).string(); }
  std::string Write(const std::string& name, const std::string& content) {
    std::ofstream(Path(name), std::ios::binary) << content;
    return Path(name);
  }

  fs::path directory_;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(PlatformFileTest, ReadsARegularFileAndASymlinkToOne) {
  std::string path = Write("spec.yml", "version: 1\n");
  auto text = ReadRegularFile(path, 1024);
  ASSERT_TRUE(text.ok()) << text.error();
  EXPECT_EQ(*text, "version: 1\n");
  fs::create_symlink(path, Path("link.yml"));  // as a Kubernetes ConfigMap mounts it
  EXPECT_EQ(*ReadRegularFile(Path("link.yml"), 1024), "version: 1\n");
  EXPECT_EQ(*ReadRegularFile(Write("empty", ""), 0), "");
}

TEST_F(PlatformFileTest, ExactlyTheLimitIsReadOneMoreByteIsRefused) {
  EXPECT_TRUE(ReadRegularFile(Write("ten", std::string(10, 'x')), 10).ok());
  ReadFailure failure;
  auto text = ReadRegularFile(Write("eleven", std::string(11, 'x')), 10, nullptr, &failure);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kTooLarge);
  EXPECT_EQ(text.error(),
            "cannot read " + Path("eleven") + ": it is 11 bytes, more than the limit of 10 bytes");
}

TEST_F(PlatformFileTest, MissingFileIsNotFound) {
  ReadFailure failure;
  auto text = ReadRegularFile(Path("nope"), 10, nullptr, &failure);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kNotFound);
  EXPECT_EQ(text.error(), "cannot read " + Path("nope") + ": No such file or directory");
}

TEST_F(PlatformFileTest, FifoIsRefusedAtOnceWithoutAWriter) {
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  auto start = std::chrono::steady_clock::now();
  ReadFailure failure;
  auto text = ReadRegularFile(Path("fifo"), 1u << 20, nullptr, &failure);
  EXPECT_LT(SecondsSince(start), 1.0);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kNotRegular);
  EXPECT_EQ(text.error(), "cannot read " + Path("fifo") + ": it is a FIFO, not a regular file");
}

TEST_F(PlatformFileTest, DevZeroBehindASymlinkIsRefusedBeforeReading) {
  fs::create_symlink("/dev/zero", Path("zero.yml"));
  ReadFailure failure;
  auto text = ReadRegularFile(Path("zero.yml"), 32u << 20, nullptr, &failure);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kNotRegular);
  EXPECT_EQ(text.error(),
            "cannot read " + Path("zero.yml") + ": it is a character device, not a regular file");
}

TEST_F(PlatformFileTest, DirectoryIsRefused) {
  ReadFailure failure;
  auto text = ReadRegularFile(directory_.string(), 1024, nullptr, &failure);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kNotRegular);
  EXPECT_EQ(text.error(),
            "cannot read " + directory_.string() + ": it is a directory, not a regular file");
}

TEST_F(PlatformFileTest, SparseFileOf600MiBIsRefusedByItsSizeFast) {
  int fd = open(Path("sparse").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 600LL << 20), 0);
  close(fd);
  auto start = std::chrono::steady_clock::now();
  ReadFailure failure;
  auto text = ReadRegularFile(Path("sparse"), 32u << 20, nullptr, &failure);
  EXPECT_LT(SecondsSince(start), 0.5);  // refused by fstat, nothing read
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kTooLarge);
  EXPECT_EQ(text.error(), "cannot read " + Path("sparse") +
                              ": it is 629145600 bytes, more than the limit of 32 MiB");
}

TEST_F(PlatformFileTest, CancelledReadStopsWithAnError) {
  std::string path = Write("big", std::string(4u << 20, 'x'));
  std::atomic<bool> cancelled{true};
  ReadFailure failure;
  auto text = ReadRegularFile(path, 8u << 20, &cancelled, &failure);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kCancelled);
  EXPECT_EQ(text.error(), "cannot read " + path + ": cancelled");
  cancelled = false;
  EXPECT_EQ(ReadRegularFile(path, 8u << 20, &cancelled)->size(), 4u << 20);
}

TEST_F(PlatformFileTest, DescriptorReadChecksTheTypeToo) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto text = ReadRegularFd(fd, "/dev/null", 10);
  close(fd);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error(), "cannot read /dev/null: it is a character device, not a regular file");
}

// OpenGuarded as any user can check it; the refusal of another user's link is in
// tests/e2e/job_files_test.py (needs root and a second user).
TEST_F(PlatformFileTest, GuardedOpenFollowsOwnLinksAndWalksEveryComponent) {
  std::string path = Write("checkpoint", "1796040000\n");
  fs::create_directory(Path("sub"));
  fs::create_symlink("../checkpoint", Path("sub/relative"));
  fs::create_symlink(path, Path("absolute"));
  fs::create_directory_symlink(directory_, Path("loop-free"));
  for (const char* name : {"checkpoint", "sub/relative", "absolute", "loop-free/sub/../checkpoint",
                           "./sub/./relative"}) {
    auto text = ReadGuardedFile(Path(name), 1024);
    ASSERT_TRUE(text.ok()) << name << ": " << text.error();
    EXPECT_EQ(*text, "1796040000\n") << name;
  }
  auto directory = OpenGuarded(Path("loop-free"), OpenKind::kDirectory);
  ASSERT_TRUE(directory.ok()) << directory.error();
  struct stat info {};
  ASSERT_EQ(fstat(directory->get(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_TRUE(OpenGuarded("/", OpenKind::kDirectory).ok());
}

TEST_F(PlatformFileTest, GuardedOpenSaysNotFoundNotRegularAndLoops) {
  ReadFailure failure;
  EXPECT_FALSE(ReadGuardedFile(Path("nope/x"), 10, nullptr, &failure).ok());
  EXPECT_EQ(failure, ReadFailure::kNotFound);
  fs::create_symlink(Path("gone"), Path("dangling"));
  EXPECT_FALSE(ReadGuardedFile(Path("dangling"), 10, nullptr, &failure).ok());
  EXPECT_EQ(failure, ReadFailure::kNotFound);
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  auto fifo = ReadGuardedFile(Path("fifo"), 10, nullptr, &failure);
  EXPECT_EQ(failure, ReadFailure::kNotRegular);
  EXPECT_EQ(fifo.error(), "cannot read " + Path("fifo") + ": it is a FIFO, not a regular file");
  fs::create_symlink(Path("b"), Path("a"));
  fs::create_symlink(Path("a"), Path("b"));
  EXPECT_FALSE(ReadGuardedFile(Path("a"), 10, nullptr, &failure).ok());
  EXPECT_EQ(failure, ReadFailure::kOpen);
  EXPECT_FALSE(OpenGuarded(Path("fifo"), OpenKind::kDirectory, &failure).ok());
  EXPECT_EQ(failure, ReadFailure::kNotRegular);
}

TEST_F(PlatformFileTest, GuardedOpenRefusesAHardLinkInADirectoryOthersMayWrite) {
  std::string secret = Write("secret", "ghp_SECRETTOKEN\n");
  fs::create_directory(Path("shared"));
  ASSERT_EQ(chmod(Path("shared").c_str(), 01777), 0);  // as /tmp
  ASSERT_EQ(link(secret.c_str(), Path("shared/checkpoint").c_str()), 0);
  ReadFailure failure;
  auto text = ReadGuardedFile(Path("shared/checkpoint"), 1024, nullptr, &failure);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(failure, ReadFailure::kUnsafe);
  EXPECT_EQ(text.error(), "cannot read " + Path("shared/checkpoint") +
                              ": it has 2 links, in a directory others may write");
  // The same file with one link there is read.
  ASSERT_EQ(unlink(secret.c_str()), 0);
  EXPECT_TRUE(ReadGuardedFile(Path("shared/checkpoint"), 1024).ok());
}

}  // namespace
}  // namespace schedwatch::platform
