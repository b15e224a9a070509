#include "schedwatch/platform/subprocess.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace schedwatch::platform {
namespace {

std::string Errno(int error) { return std::strerror(error); }

}  // namespace

Result<bool> RunCommand(const std::vector<std::string>& argv,
                        const std::function<std::size_t(std::string_view)>& consume,
                        const std::atomic<bool>* cancelled, const CommandOptions& options) {
  if (argv.empty()) return Error{"no command to run"};
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Error{"pipe: " + Errno(errno)};
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]), close(out[1]);
    return Error{"pipe: " + Errno(errno)};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]), close(err[1]);
  if (spawned != 0) {
    close(out[0]), close(err[0]);
    return Error{fmt::format("cannot run {}: {}", argv[0], Errno(spawned))};
  }
  std::string pending, errors;
  bool out_open = true, err_open = true, killed = false, too_long = false;
  char buffer[65536];
  while (out_open || err_open) {
    if (!killed && cancelled != nullptr && cancelled->load()) {
      kill(pid, SIGKILL);
      killed = true;
    }
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    if (poll(fds, 2, 100) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      if (i == 1) {
        errors.append(
            buffer, std::min<std::size_t>(n, options.max_error_bytes -
                                                 std::min(options.max_error_bytes, errors.size())));
        continue;
      }
      pending.append(buffer, static_cast<std::size_t>(n));
      pending.erase(0, consume(pending));
      if (pending.size() > options.max_line_bytes && !killed) {
        kill(pid, SIGKILL);
        killed = true;
        too_long = true;
      }
    }
  }
  close(out[0]), close(err[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (too_long) {
    return Error{
        fmt::format("{} wrote a line longer than {} MiB", argv[0], options.max_line_bytes >> 20)};
  }
  if (killed) return Error{fmt::format("{} cancelled", argv[0])};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = errors.substr(0, errors.find('\n'));
    return Error{fmt::format(
        "{} failed ({}): {}", argv[0],
        WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status)) : "killed",
        options.clean_error ? options.clean_error(first) : first)};
  }
  return true;
}

}  // namespace schedwatch::platform
