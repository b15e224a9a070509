// Stopping schedwatch_exporter (SIGTERM, as systemd stops it) while a source's read is stuck in
// the kernel: a job's checkpoint on a mount whose server is gone (FUSE standing in for a hard NFS
// mount). Cancelling cannot reach that read; the exporter must still exit, soon and cleanly, not
// wait for the mount until systemd's SIGKILL. Needs root (mount).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/fixtures/silent_fuse.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::SilentFuse;
using testing::TempDir;
using testing::WriteFile;

// The exporter's exit status, or -1 if it has not exited by `until`.
int WaitForExit(pid_t pid, std::chrono::steady_clock::time_point until) {
  for (;;) {
    int status = 0;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() >= until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

TEST(ExporterStopTest, ExitsWithoutWaitingForAReadStuckOnAHungMount) {
  TempDir dir;
  fs::create_directories(dir.path() / "mnt");
  WriteFile(dir.path() / "live.yaml",
            "objects: [{id: i, role: ingest, schedule: '*/10 * * * *', spec_version: '1'}]\n");
  WriteFile(dir.path() / "spec.yaml", R"(version: 1
sources:
  jobs: {type: file, path: live.yaml, timeout: 1s}
jobs:
  - {role: ingest, source: jobs, schedule: "*/10 * * * *", spec_version: "1",
     progress: {file: mnt/ingest.checkpoint, stale_after: 1h}}
)");
  SilentFuse fuse(dir.path() / "mnt", SilentFuse::Hang::kUnread);
  ASSERT_EQ(fuse.error(), "");
  const std::string log = (dir.path() / "exporter.log").string();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(log.c_str(), "w", stderr);
    execl(kSchedwatchExporter, kSchedwatchExporter, "--config.file",
          (dir.path() / "spec.yaml").c_str(), "--web.listen-address", "127.0.0.1:0",
          "--refresh.interval", "1s", static_cast<char*>(nullptr));
    _exit(127);
  }
  // The checkpoint's read reached the mount, where it stays.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fuse.Asked() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(fuse.Asked()) << ReadFile(log);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  // The mount still hangs: the exporter exits without the read (after its grace of 10 s).
  int status = WaitForExit(pid, std::chrono::steady_clock::now() + std::chrono::seconds(60));
  fuse.Stop();
  if (status == -1) {
    status = WaitForExit(pid, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    ADD_FAILURE() << "the exporter waited for the stuck read; exit " << status << " once the "
                  << "mount was gone\n"
                  << ReadFile(log);
  }
  EXPECT_EQ(status, 0) << ReadFile(log);
  std::string logged = ReadFile(log);
  EXPECT_NE(logged.find("msg=\"exiting without waiting for the refresh to stop\""),
            std::string::npos)
      << logged;
}

}  // namespace
}  // namespace schedwatch
