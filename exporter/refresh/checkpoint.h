// A job's business checkpoint (`progress.file` in the spec): a file the job itself writes, so
// whatever it holds must never crash or blind the watcher.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch {

// A checkpoint holds one line; more than this is not a checkpoint.
inline constexpr std::size_t kMaxCheckpointBytes = 4096;

// The first line of a checkpoint: Unix seconds or an RFC 3339 time, from 1970 to 9999. Empty
// (a job that only touches the file) is nullopt: the file's mtime counts. Anything else, a
// number out of range included, is an Error that says where (line, size, column), never what:
// the text may be a secret the job's user linked to.
Result<std::optional<std::int64_t>> ParseCheckpoint(std::string_view text);

// The checkpoint at `path`: nullopt when the file does not exist (yet); an Error when it cannot
// be read (not a regular file, too large, a link the job's user planted: platform::OpenGuarded)
// or parsed.
Result<std::optional<std::int64_t>> ReadCheckpoint(const std::string& path);

}  // namespace schedwatch
