// Cron log parsing speed: 1,000,000 mixed syslog lines parsed in memory, and the crontab source
// reading a 1,000,000-line syslog file first whole, then after 1,000 appended lines (an
// incremental refresh reads only the new bytes). Then the crontabs: 100,000 marked entries in
// 100 cron.d files listed again and again with nothing changed (a quiet refresh's read), and
// after one file changed. Prints figures; asserts nothing.
//
//   crontab_bench [lists]   (lists of the 100,000 entries; default 10)
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sources/crontab/cron_log.h"
#include "sources/crontab/crontab_source.h"

namespace {

using schedwatch::crontab::CronLogBatch;
using schedwatch::crontab::CronLogOptions;
using schedwatch::crontab::CronLogState;

constexpr int kLines = 1000000;
constexpr std::int64_t kStart = 1796032800;  // 2026-12-01T10:00:00Z

// A day of a busy host: per cron run 5 lines (pam open, CMD, maybe error, END, pam close) among
// lines of other programs, about half the lines cron's.
std::string MixedLines(int count, int first_pid) {
  std::string text;
  text.reserve(static_cast<std::size_t>(count) * 110);
  int pid = first_pid;
  for (int i = 0; i < count;) {
    std::int64_t second = kStart + i / 20;
    std::string time = fmt::format("2026-12-01T{:02}:{:02}:{:02}.{:06}+00:00", second / 3600 % 24,
                                   second / 60 % 60, second % 60, i % 1000000);
    switch (i % 10) {
      case 0:
        text += fmt::format("{} vm CRON[{}]: (root) CMD ([{}] /usr/local/bin/retry --queue main)\n",
                            time, pid, pid + 1);
        break;
      case 1:
        text += fmt::format(
            "{} vm CRON[{}]: pam_unix(cron:session): session opened for user "
            "root(uid=0) by (uid=0)\n",
            time, pid);
        break;
      case 2:
        if (pid % 4 == 0) {
          text += fmt::format(
              "{} vm CRON[{}]: (CRON) error (grandchild #{} failed with exit status 3)\n", time,
              pid, pid + 1);
        } else {
          text += fmt::format("{} vm CRON[{}]: (CRON) info (No MTA installed, discarding output)\n",
                              time, pid);
        }
        break;
      case 3:
        text += fmt::format("{} vm CRON[{}]: (root) END ([{}] /usr/local/bin/retry --queue main)\n",
                            time, pid, pid + 1);
        pid += 2;
        break;
      case 4:
        text += fmt::format(
            "{} vm CRON[{}]: pam_unix(cron:session): session closed for user root\n", time, pid);
        break;
      case 5:
        text += fmt::format(
            "{} vm sshd[{}]: Accepted publickey for ops from 192.0.2.7 port {} "
            "ssh2: ED25519 SHA256:abcdefghijklmnop\n",
            time, 900 + i % 50, 40000 + i % 20000);
        break;
      case 6:
        text += fmt::format(
            "{} vm systemd[1]: Started session-{}.scope - Session {} of User ops.\n", time, i, i);
        break;
      case 7:
        text += fmt::format(
            "{} vm kernel: [{}.{:06}] audit: type=1400 apparmor=\"ALLOWED\" "
            "operation=\"open\"\n",
            time, i / 1000, i % 1000000);
        break;
      default:
        text += fmt::format("{} vm app[{}]: request id={} status=200 duration_ms={}\n", time,
                            1200 + i % 7, i, i % 977);
        break;
    }
    ++i;
  }
  return text;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

// The source over `root`: its cron.d and a syslog at its top.
schedwatch::crontab::CrontabSourceOptions OptionsUnder(const std::filesystem::path& root) {
  schedwatch::crontab::CrontabSourceOptions options;
  options.root = root.string();
  options.paths = {"/etc/cron.d"};
  options.syslog = "/syslog";
  options.trusted_uid = static_cast<long>(geteuid());
  return options;
}

// The crontabs of bench/gen_roles.py --type crontab: `files` cron.d files of 1,000 marked
// entries each, no log.
bool ListCrontabs(const std::filesystem::path& root, int files, int lists) {
  std::filesystem::create_directories(root / "etc/cron.d");
  auto write = [&](int file, const char* command_suffix) {
    std::string text;
    for (int i = file * 1000; i < (file + 1) * 1000; ++i) {
      text += fmt::format("# schedwatch: role=job-{:06} spec_version={}\n", i, i % 7 + 1);
      text += fmt::format("{} {} * * * root /usr/local/bin/job-{:06} --run{}\n", i % 60, i % 24, i,
                          command_suffix);
    }
    std::ofstream(root / fmt::format("etc/cron.d/app{:03}", file)) << text;
  };
  for (int file = 0; file < files; ++file) write(file, "");
  schedwatch::crontab::CrontabSource source(OptionsUnder(root));
  std::vector<double> seconds;
  bool ok = true;
  for (int list = 0; list <= lists; ++list) {
    if (list == lists) write(files / 2, " --changed");
    auto start = std::chrono::steady_clock::now();
    auto snapshot = source.List(schedwatch::ListContext{kStart + 60 * list, nullptr});
    seconds.push_back(Seconds(start));
    ok = ok && snapshot.ok() && snapshot->objects.size() == static_cast<std::size_t>(files) * 1000;
  }
  double changed = seconds.back();
  seconds.pop_back();
  std::sort(seconds.begin() + 1, seconds.end());
  std::printf(
      "crontabs: %d entries in %d files: first list %.3f s, unchanged lists %.3f s median "
      "(%d lists), after one file changed %.3f s (%s)\n",
      files * 1000, files, seconds[0], seconds[seconds.size() / 2], lists, changed,
      ok ? "ok" : "FAILED");
  return ok;
}

int main(int argc, char** argv) {
  const int lists = argc > 1 ? std::atoi(argv[1]) : 10;
  std::string text = MixedLines(kLines, 1000);
  CronLogOptions options;
  options.now = kStart + 86400;
  CronLogState state;
  CronLogBatch batch;
  auto start = std::chrono::steady_clock::now();
  std::size_t consumed = schedwatch::crontab::ParseSyslog(text, options, state, batch);
  double parse = Seconds(start);
  std::printf(
      "parse %d mixed syslog lines (%.1f MB) in memory: %.3f s (%.0f lines/s), %zu runs, "
      "%zu bytes consumed\n",
      kLines, text.size() / 1e6, parse, kLines / parse, batch.finished.size(), consumed);

  // The source, reading a file: the whole file first, then only what was appended.
  std::string pattern =
      (std::filesystem::temp_directory_path() / "schedwatch-crontab-bench-XXXXXX").string();
  std::filesystem::path root = mkdtemp(pattern.data());
  std::filesystem::create_directories(root / "etc/cron.d");
  std::ofstream(root / "etc/cron.d/app") << "# schedwatch: role=retry spec_version=7\n"
                                            "*/10 * * * * root /usr/local/bin/retry --queue main\n";
  std::ofstream(root / "syslog", std::ios::binary) << text;
  schedwatch::crontab::CrontabSource source(OptionsUnder(root));
  schedwatch::ListContext context{kStart + 86400, nullptr};

  start = std::chrono::steady_clock::now();
  auto first = source.List(context);
  double initial = Seconds(start);
  std::printf("source: first read of a %d-line file: %.3f s (%s)\n", kLines, initial,
              first.ok() ? "ok" : first.error().c_str());

  std::ofstream(root / "syslog", std::ios::binary | std::ios::app) << MixedLines(1000, 9000000);
  start = std::chrono::steady_clock::now();
  auto next = source.List(schedwatch::ListContext{kStart + 86460, nullptr});
  double incremental = Seconds(start);
  std::printf(
      "source: refresh after appending 1,000 lines: %.4f s (%.0fx faster than the first "
      "read; %s)\n",
      incremental, initial / incremental, next.ok() ? "ok" : next.error().c_str());

  start = std::chrono::steady_clock::now();
  auto idle = source.List(schedwatch::ListContext{kStart + 86520, nullptr});
  std::printf("source: refresh with nothing appended: %.4f s\n", Seconds(start));
  std::filesystem::remove_all(root);
  bool listed = ListCrontabs(root, 100, std::max(lists, 1));
  std::filesystem::remove_all(root);
  return first.ok() && next.ok() && idle.ok() && listed ? 0 : 1;
}
