// What the sources' benchmarks of shards share: each reader (one exporter of all the roles, or one
// shard of N) runs in a child process of its own, so that its peak memory (VmHWM) is its own, and
// hands its line of figures back through a pipe.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace schedwatch::bench {

// A field of /proc/self/status in MiB ("VmHWM", "VmRSS"); 0 if absent.
inline double StatusMiB(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1)) / 1024.0;
  }
  return 0;
}

struct Reader {
  pid_t pid = -1;
  int from = -1;  // what the child writes
};

// Runs `body` (which returns the reader's figures) in a child process. Fork before any thread is
// started: the child has only the forking one.
template <typename Body>
Reader StartReader(Body body) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return {};
  Reader reader{fork(), pipe_ends[0]};
  if (reader.pid == 0) {
    close(pipe_ends[0]);
    std::string figures = body();
    for (std::size_t done = 0; done < figures.size();) {
      ssize_t wrote = write(pipe_ends[1], figures.data() + done, figures.size() - done);
      if (wrote <= 0) break;
      done += static_cast<std::size_t>(wrote);
    }
    _exit(0);  // no destructors of what the parent made (the fake servers)
  }
  close(pipe_ends[1]);
  return reader;
}

// What the reader wrote, once it ended.
inline std::string FinishReader(Reader reader) {
  std::string figures;
  char buffer[4096];
  for (ssize_t got; reader.from >= 0 && (got = read(reader.from, buffer, sizeof buffer)) > 0;) {
    figures.append(buffer, static_cast<std::size_t>(got));
  }
  if (reader.from >= 0) close(reader.from);
  if (reader.pid > 0) waitpid(reader.pid, nullptr, 0);
  return figures.empty() ? "(the reader failed)\n" : figures;
}

}  // namespace schedwatch::bench
