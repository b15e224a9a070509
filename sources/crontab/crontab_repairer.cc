// crontab: the template is a cron.d file written as <cron.d>/schedwatch-<role>, mode 0644, owned
// by whoever runs reconcile (root, for cron to accept it). Written complete before it takes its
// one name (platform::WriteFileAtomically, kKeep), so cron never reads half a file nor a file
// with two links, and an existing file is never replaced. What a killed run left is finished
// or removed by the next one.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schedwatch/classify.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/platform/log.h"
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
    if (!cleaned_) {
      // Once a run (under the reconcile lock): temporaries a killed run left.
      cleaned_ = true;
      auto removed = platform::RemoveStaleTemporaries(directory_, "schedwatch-");
      if (!removed || *removed > 0) {
        Log(removed ? LogLevel::kInfo : LogLevel::kWarn, "stale temporaries",
            {{"dir", directory_},
             removed ? LogField{"removed", std::to_string(*removed)}
                     : LogField{"err", removed.error()}});
      }
    }
    // A file an interrupted run linked but left with a second name, which cron ignores.
    auto finished = platform::FinishInterruptedCreate(target, text);
    if (!finished) return Error{finished.error()};
    if (*finished) return Creation{target};
    // Never renamed over: an object someone else just created stays.
    auto created = platform::WriteFileAtomically(target, text, 0644, platform::Existing::kKeep);
    if (!created) return Error{created.error()};
    if (!*created) return Creation{target, true};
    return Creation{target};
  }

 private:
  std::string directory_;
  bool cleaned_ = false;
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
