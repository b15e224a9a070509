#include "sources/systemd/systemd_descriptor.h"

namespace schedwatch::systemd {
namespace {

class SystemdDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "systemd"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{{"bus_address"}, {"journal_directory"}, {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<SystemdSettings>();
    ReadCommonSettings(reader, *settings);
    if (auto address = reader.String("bus_address")) {
      if (address->empty()) reader.Problem("bus_address", "empty");
      settings->bus_address = *address;
    }
    if (auto directory = reader.String("journal_directory")) {
      if (directory->empty() || directory->front() != '/') {
        reader.Problem("journal_directory", "must be an absolute path");
      }
      settings->journal_directory = *directory;
    }
    return settings;
  }

  std::string RunHistoryOrigin(const SourceSettings& settings) const override {
    const auto* systemd = dynamic_cast<const SystemdSettings*>(&settings);
    if (systemd == nullptr || systemd->journal_directory.empty()) return "the journal";
    return "journal " + systemd->journal_directory;
  }

  // Timers' OnCalendar= expressions, with systemd's DST handling.
  CronDialect dialect() const override { return CronDialect::kSystemdCalendar; }
};

}  // namespace

const SourceDescriptor& Descriptor() {
  static const SystemdDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::systemd
