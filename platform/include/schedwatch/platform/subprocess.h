// Running a helper program and reading what it prints (journalctl for the crontab source):
// standard input is /dev/null, standard output goes to the caller as it comes, standard error
// is kept (bounded) for the message, and a cancelled caller kills the program at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch::platform {

struct CommandOptions {
  // Output not consumed past this is an error (the program is killed): one line too long.
  std::size_t max_line_bytes = 16u << 20;
  std::size_t max_error_bytes = 4096;  // of standard error, kept for the message
  // Makes the first line of standard error fit for a message (e.g. valid UTF-8).
  std::function<std::string(std::string_view)> clean_error;
};

// Runs `argv` (argv[0] looked up in PATH). `consume` gets the unconsumed output and returns how
// many bytes it used (whole lines); the rest is offered again with more. Fails when the program
// cannot start, exits non-zero or by a signal ("journalctl failed (exit status 1): <first line
// of its standard error>"), is cancelled, or writes a line longer than the limit.
Result<bool> RunCommand(const std::vector<std::string>& argv,
                        const std::function<std::size_t(std::string_view)>& consume,
                        const std::atomic<bool>* cancelled, const CommandOptions& options = {});

}  // namespace schedwatch::platform
