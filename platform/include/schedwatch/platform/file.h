// Reading files that someone else controls (a spec, a snapshot, a template, a token, a job's
// checkpoint) without trusting them: only regular files are read, never more than a limit, and
// a read stops when its caller gives up. A FIFO, /dev/zero or a huge sparse file is an error
// before anything is allocated, and nothing blocks (the file is opened non-blocking).
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch::platform {

// Why a read failed, for callers that treat some cases apart (a missing file, an oversized one).
enum class ReadFailure {
  kNone,
  kNotFound,    // the path (or the target of a symlink) does not exist
  kOpen,        // any other reason it could not be opened: permissions, a symlink loop
  kNotRegular,  // a FIFO, device, socket or directory
  kTooLarge,    // more than max_bytes, by its size or while it was read
  kRead,        // read(2) failed
  kCancelled,   // `cancelled` became true
  kUnsafe,      // OpenGuarded: a path someone other than root or this user could redirect
};

// The whole content of the regular file at `path` (symlinks are followed: Kubernetes mounts
// ConfigMaps and Secrets as symlinks). Errors read "cannot read PATH: why".
Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes,
                                    const std::atomic<bool>* cancelled = nullptr,
                                    ReadFailure* failure = nullptr);

// The same for a descriptor the caller opened (and closes), e.g. after checking its owner and
// mode with fstat; `path` names it in messages. Reads from the current offset.
Result<std::string> ReadRegularFd(int fd, const std::string& path, std::size_t max_bytes,
                                  const std::atomic<bool>* cancelled = nullptr,
                                  ReadFailure* failure = nullptr);

// A state directory (the reconcile lock's, the ledger's) on a first run: made with mode 0700
// when it is missing and its parent is trusted (a real directory, not a symbolic link, owned by
// root or this user and writable by no one else). When it cannot be made, the error says why
// and the one command that makes it ("install -d -m 0700 ..."). An existing directory is left
// as it is, for its users to judge.
Result<bool> EnsureStateDirectory(const std::string& directory);

// A descriptor that closes itself.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// For reading a large file in pieces: the regular file at `path`, opened as ReadRegularFile
// opens it, with its size (at most max_bytes) in `*size`. The same errors.
Result<UniqueFd> OpenRegularFile(const std::string& path, std::size_t max_bytes, std::size_t* size,
                                 ReadFailure* failure = nullptr);
// Reads up to `size` bytes of `fd` into `buffer` (retrying EINTR); `*total` counts every byte
// read so far, and more than max_bytes is the error ReadRegularFile gives for a file that grew.
Result<std::size_t> ReadPiece(int fd, const std::string& path, char* buffer, std::size_t size,
                              std::size_t max_bytes, std::size_t* total,
                              ReadFailure* failure = nullptr);

// Files in directories a job's user may write (a progress checkpoint, a `file` snapshot, run
// records, schedwatch_run's record and lock directories) are opened with OpenGuarded, so that
// a planted link cannot make the reader (often root) show or touch a file that user may not
// read. The path is walked one component at a time (openat with O_NOFOLLOW), and refused when:
// - a component is a symbolic link that neither root nor this process's user owns (links root
//   made, such as the ones Kubernetes mounts a ConfigMap with, are followed);
// - it steps from a directory an ordinary user owns to anything another user owns (systemd's
//   rule for safe paths: that user could have put a link or hard link to it there);
// - the last component is a regular file with more than one link in a directory that others
//   than its owner may write (a hard link planted in /tmp).
// A missing component is kNotFound; a refusal is kUnsafe and its message names the component
// and its owner, never any content. `directory`: the last component must be a directory (the
// descriptor is O_RDONLY | O_DIRECTORY), else a regular file (O_RDONLY | O_NONBLOCK).
enum class OpenKind { kRegularFile, kDirectory };
Result<UniqueFd> OpenGuarded(const std::string& path, OpenKind kind,
                             ReadFailure* failure = nullptr);

// OpenGuarded inside `root` (a container's root seen from the host, "/proc/PID/root"): the walk
// starts at `root`, an absolute link target starts there again and ".." stops there, so links
// inside the container mean what they mean to it. `root` itself is opened as given.
Result<UniqueFd> OpenGuardedIn(const std::string& root, const std::string& path, OpenKind kind,
                               ReadFailure* failure = nullptr);

// ReadRegularFile through OpenGuarded.
Result<std::string> ReadGuardedFile(const std::string& path, std::size_t max_bytes,
                                    const std::atomic<bool>* cancelled = nullptr,
                                    ReadFailure* failure = nullptr);
// ReadRegularFile through OpenGuardedIn.
Result<std::string> ReadGuardedFileIn(const std::string& root, const std::string& path,
                                      std::size_t max_bytes,
                                      const std::atomic<bool>* cancelled = nullptr,
                                      ReadFailure* failure = nullptr);

// How WriteFileAtomically treats a file already at the path.
enum class Existing { kReplace, kKeep };

// Writes `content` so that `path` names either nothing, the old file or the complete new one,
// even when the process is killed or the machine stops at any point. `mode` is exact (not
// masked by the umask); the file is fsynced before it takes its name and the directory after.
// - kReplace: a temporary ".NAME.PID.SEQ.tmp" beside `path` (same directory), renamed over it.
// - kKeep: an existing file stays, and false is returned. An unnamed file (O_TMPFILE) is linked
//   to `path`; where the file system has none, a temporary is renamed with RENAME_NOREPLACE.
//   Either way the file never has a second name (cron ignores a cron.d file with two links).
// A writer holds a lock on its temporary while it writes, so RemoveStaleTemporaries tells a
// live writer's temporary from one a killed writer left. Errors name the path.
Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 unsigned int mode = 0644, Existing existing = Existing::kReplace);

// Removes what killed writers left in `directory`: temporaries ".NAME.PID.SEQ.tmp" of names
// starting with `prefix` that are regular files this user owns, with one link, that no writer
// holds. Symbolic links and anything else are never followed nor removed. The number removed.
Result<std::size_t> RemoveStaleTemporaries(const std::string& directory, std::string_view prefix);

// Completes a create killed between link and unlink (older versions did that; kKeep still
// does where neither O_TMPFILE nor RENAME_NOREPLACE works): `path` with two links,
// the other a temporary ".NAME.PID.SEQ.tmp" of this user beside it, holding exactly `content`.
// The temporary's name is removed (true); anything else is left as it is (false).
Result<bool> FinishInterruptedCreate(const std::string& path, std::string_view content);

// "a FIFO", "a directory", "a character device", ... for messages; "a regular file" too.
std::string DescribeFileType(unsigned int st_mode);

}  // namespace schedwatch::platform
