// crontab: the template is a cron.d file written as <cron.d>/schedwatch-<role>, mode 0644, owned
// by whoever runs reconcile (root, for cron to accept it). Written to a temporary file first and
// linked into place, so cron never reads half a file and an existing file is never replaced.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schedwatch/classify.h"
#include "sources/crontab/crontab_descriptor.h"
#include "sources/crontab/crontab_file.h"
#include "sources/repairer.h"

namespace schedwatch {
namespace {

class CrontabRepairer : public Repairer {
 public:
  explicit CrontabRepairer(std::string directory) : directory_(std::move(directory)) {}

  Result<bool> Validate(const JobSpec& job, const std::string& text) override {
    auto parsed = crontab::ParseCrontab(text, crontab::CrontabKind::kSystem, "", nullptr);
    if (!parsed.ignored_because.empty()) {
      return Error{fmt::format("cron would ignore it: {}", parsed.ignored_because)};
    }
    int matching = 0;
    for (const auto& entry : parsed.entries) {
      if (entry.role.empty()) continue;
      if (entry.role != job.role) {
        return Error{fmt::format("line {}: its marker names role \"{}\", not \"{}\"", entry.line,
                                 entry.role, job.role)};
      }
      LiveObject object{"template", entry.role,         entry.schedule,
                        "",         entry.spec_version, entry.enabled};
      if (!entry.enabled)
        return Error{fmt::format("line {}: the entry is commented out", entry.line)};
      if (Drifted(job, object)) {
        return Error{
            fmt::format("line {}: schedule \"{}\" spec_version \"{}\" differ from the "
                        "spec's \"{}\" and \"{}\"",
                        entry.line, entry.schedule, entry.spec_version,
                        job.schedule.expression().text(), job.spec_version)};
      }
      ++matching;
    }
    if (matching != 1) {
      return Error{
          fmt::format("it must hold exactly one entry under a \"# schedwatch: role={} "
                      "spec_version={}\" marker, found {}",
                      job.role, job.spec_version, matching)};
    }
    return true;
  }

  Result<Creation> Create(const JobSpec& job, const std::string& text) override {
    std::string target = fmt::format("{}/schedwatch-{}", directory_, job.role);
    std::string temporary = fmt::format("{}/.schedwatch-{}.{}", directory_, job.role, getpid());
    int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Error{fmt::format("cannot create {}: {}", temporary, std::strerror(errno))};
    bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                   fchmod(fd, 0644) == 0 && fsync(fd) == 0;
    int saved_errno = errno;
    close(fd);
    if (!written) {
      unlink(temporary.c_str());
      return Error{fmt::format("cannot write {}: {}", temporary, std::strerror(saved_errno))};
    }
    // link() fails with EEXIST instead of replacing: an object someone else just created stays.
    int linked = link(temporary.c_str(), target.c_str());
    saved_errno = errno;
    unlink(temporary.c_str());
    if (linked != 0 && saved_errno == EEXIST) return Creation{target, true};
    if (linked != 0) {
      return Error{fmt::format("cannot create {}: {}", target, std::strerror(saved_errno))};
    }
    return Creation{target};
  }

 private:
  std::string directory_;
};

}  // namespace

Result<std::unique_ptr<Repairer>> MakeCrontabRepairer(const SourceSpec& source) {
  const auto* settings = source.SettingsAs<crontab::CrontabSettings>();
  if (settings == nullptr) return Error{"the settings are not a crontab source's"};
  // The source's cron.d directory: a configured path that ends in cron.d, else /etc/cron.d.
  std::string directory = "/etc/cron.d";
  for (const auto& path : settings->paths) {
    if (path.size() >= 6 && path.compare(path.size() - 6, 6, "cron.d") == 0) directory = path;
  }
  return std::unique_ptr<Repairer>(std::make_unique<CrontabRepairer>(settings->root + directory));
}

}  // namespace schedwatch
