// Replacing a file someone else owns (a user's crontab) through platform's atomic writer
// (file.h): the new file gets that owner and mode before it takes the name, and a last check
// runs just before the rename, so that a file changed since it was read is not overwritten.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "schedwatch/platform/file.h"
#include "schedwatch/result.h"

namespace schedwatch::platform {

struct AtomicWrite {
  unsigned int mode = 0644;
  Existing existing = Existing::kReplace;
  std::optional<std::pair<unsigned int, unsigned int>> owner;  // uid, gid
  // Asked last, just before the rename; an Error aborts the write and is returned.
  std::function<Result<bool>()> before_rename;
};

// WriteFileAtomically (file.h), with an owner and a last check.
Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 const AtomicWrite& how);

}  // namespace schedwatch::platform
