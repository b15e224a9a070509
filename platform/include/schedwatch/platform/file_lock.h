// An exclusive flock(2) on a file, so that two processes never do the same work at once (two
// reconcilers, two copies of a job). The lock goes with the descriptor: closing it, or the
// process ending, releases it; the file stays, so there is no race on unlinking it.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "schedwatch/platform/clock.h"
#include "schedwatch/result.h"

namespace schedwatch::platform {

class FileLock {
 public:
  // One try at `path` (created with `mode`, never through a symlink). `lock` is null when
  // another holder has it; `holder` is then what that holder wrote with WriteNote.
  struct Attempt {
    std::unique_ptr<FileLock> lock;
    std::string holder;
  };
  static Result<Attempt> TryLock(const std::string& path, unsigned int mode = 0644);
  // The same for `name` in the directory `directory_fd` (`path` names it in messages), in a
  // directory other users may write too: the file must belong to this user or root, else
  // another user could hold it (or have made it a link) and every copy would stop.
  static Result<Attempt> TryLockOwnedAt(int directory_fd, const std::string& name,
                                        const std::string& path, unsigned int mode = 0644);

  // Tries every 100 ms until `wait` passes; null when it is still held then or `cancelled`.
  static Result<std::unique_ptr<FileLock>> Lock(const std::string& path, unsigned int mode,
                                                Clock::Duration wait,
                                                const std::atomic<bool>* cancelled,
                                                Clock& clock = RealClock());

  ~FileLock();  // releases the lock
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Replaces the file's content with `note` (who holds it: informative only) or empties it.
  void WriteNote(std::string_view note);

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  // Locks `fd` (owned from here on) or reads who holds it.
  static Result<Attempt> TryLockOpened(int fd, const std::string& path);
  int fd_;
};

}  // namespace schedwatch::platform
