#include "sources/crontab/crontab_descriptor.h"

#include <fmt/format.h>

namespace schedwatch::crontab {
namespace {

class CrontabDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "crontab"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{
        {"paths"}, {"syslog"},   {"history"}, {"journal_directory"},
        {"root"},  {"runs_dir"}, {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<CrontabSettings>();
    ReadCommonSettings(reader, *settings);
    auto paths = reader.PathList("paths").value_or(std::vector<std::string>{});
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (paths[i].empty() || paths[i][0] != '/') {
        reader.ItemProblem("paths", i,
                           fmt::format("crontab path \"{}\" is not absolute", paths[i]));
      }
    }
    settings->paths = std::move(paths);
    if (auto syslog = reader.Path("syslog")) {
      settings->syslog = *syslog;
      settings->history_stated = true;
    }
    if (auto history = reader.String("history")) {
      settings->history_stated = true;
      if (*history != "syslog" && *history != "journal") {
        reader.Problem("history", fmt::format("expected syslog or journal, got \"{}\"", *history));
      }
      settings->journal = *history == "journal";
    }
    settings->journal_directory = reader.Path("journal_directory").value_or("");
    settings->root = reader.Path("root").value_or("");
    while (!settings->root.empty() && settings->root.back() == '/') settings->root.pop_back();
    return settings;
  }

  std::string RunHistoryOrigin(const SourceSettings& settings) const override {
    const auto* crontab = dynamic_cast<const CrontabSettings*>(&settings);
    if (crontab == nullptr) return "cron's log";
    if (crontab->journal) return "cron's messages in the journal";
    return "cron log " + crontab->root + crontab->syslog;
  }

  CronDialect dialect() const override { return CronDialect::kDebianCron; }
  DstPolicy dst_policy() const override { return DstPolicy::kVixieCron; }
  bool allows_reboot() const override { return true; }
};

}  // namespace

const SourceDescriptor& Descriptor() {
  static const CrontabDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::crontab
