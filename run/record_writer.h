// Writing schedwatch_run's records: atomically (temporary file, fsync, rename, fsync of the
// directory), and bounded (the oldest beyond `keep` are removed). The record directory may be
// shared with other users, so everything happens through a descriptor of the role's directory
// that was opened without following links and checked to belong to this user or root: a link
// or a directory another user put there is refused, never written through or pruned.
#pragma once

#include <sys/types.h>

#include <string>

#include "schedwatch/platform/file.h"
#include "schedwatch/result.h"
#include "sources/run_record.h"

namespace schedwatch::run {

// The bytes a "running" record takes on disk, so that its run's "finished" record fits in
// them when nothing else can be written (a full filesystem).
inline constexpr std::size_t kReservedRecordBytes = 4096;
// A hidden spare of that size kept in each role's directory for the next start record.
inline constexpr const char* kSpareName = ".reserve";

// mkdir -p with `mode` for the directories it creates.
Result<bool> MakeDirectories(const std::string& path, mode_t mode);

// `<parent>/<name>` as a directory (created with 0755 if absent) that this user or root owns,
// reached without following a link another user made (platform::OpenGuarded); else an Error
// saying what was found there.
Result<platform::UniqueFd> OpenOwnDirectory(const std::string& parent, const std::string& name);

class RecordDirectory {
 public:
  // `<record_dir>/<role>`, opened once for the whole run.
  static Result<RecordDirectory> Open(const std::string& record_dir, const std::string& role);

  // Writes `record` atomically, replacing its earlier version (the same file name). A record
  // in state "running" is padded to kReservedRecordBytes. When the atomic write fails (no
  // room), the run's reserved file is overwritten in place instead, or, for a start record,
  // the spare is renamed into place first. An Error only when the record is nowhere.
  Result<bool> Write(const RunRecord& record);

  // Removes the oldest records (by name, which is by start) beyond the newest `keep`, then
  // makes sure the spare exists.
  void Prune(std::size_t keep);

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }

 private:
  Result<bool> WriteInPlace(const std::string& name, const std::string& text, bool from_spare);
  std::string path_;
  platform::UniqueFd fd_;
};

// One record into `<directory>` (its last component is the role's directory): RecordDirectory
// for one write.
Result<bool> WriteRunRecord(const std::string& directory, const RunRecord& record);
void PruneRunRecords(const std::string& directory, std::size_t keep);

}  // namespace schedwatch::run
