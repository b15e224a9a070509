// Writing schedwatch_run's records: atomically (temporary file, fsync, rename, fsync of the
// directory), and bounded (the oldest beyond `keep` are removed).
#pragma once

#include <sys/types.h>

#include <string>

#include "schedwatch/result.h"
#include "sources/run_record.h"

namespace schedwatch::run {

// mkdir -p with `mode` for the directories it creates.
Result<bool> MakeDirectories(const std::string& path, mode_t mode);

// Writes `record` as `<directory>/<RunRecordFileName(record)>`, replacing an earlier version of
// the same run (its "running" record) in one rename.
Result<bool> WriteRunRecord(const std::string& directory, const RunRecord& record);

// Removes the oldest records (by name, which is by start) beyond the newest `keep`.
void PruneRunRecords(const std::string& directory, std::size_t keep);

}  // namespace schedwatch::run
