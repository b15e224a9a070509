#include "sources/systemd/systemd_descriptor.h"

#include <fmt/format.h>

namespace schedwatch::systemd {
namespace {

class SystemdDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "systemd"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{{"bus_address"}, {"journal_directory"},
                                              {"root"},        {"unit_directory"},
                                              {"runs_dir"},    {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<SystemdSettings>();
    ReadCommonSettings(reader, *settings);
    if (auto address = reader.String("bus_address")) {
      // sd-bus addresses are transport:key=value[,...][;...]; anything else cannot connect.
      if (address->empty()) {
        reader.Problem("bus_address", "empty");
      } else if (address->find(':') == std::string::npos ||
                 address->find('=') == std::string::npos) {
        reader.Problem("bus_address",
                       fmt::format("\"{}\" is not a D-Bus address (unix:path=/run/dbus/"
                                   "system_bus_socket)",
                                   *address));
      }
      settings->bus_address = *address;
    }
    auto absolute = [&reader](std::string_view key, std::string& out) {
      if (!reader.Has(key)) return;
      auto value = reader.String(key);
      if (!value) return;
      if (value->empty() || (*value)[0] != '/') {
        reader.Problem(key, "must be an absolute path");
      }
      out = *value;
    };
    absolute("journal_directory", settings->journal_directory);
    absolute("root", settings->root);
    absolute("unit_directory", settings->unit_directory);
    while (!settings->root.empty() && settings->root.back() == '/') settings->root.pop_back();
    return settings;
  }

  std::string RunHistoryOrigin(const SourceSettings& settings) const override {
    const auto* systemd = dynamic_cast<const SystemdSettings*>(&settings);
    if (systemd == nullptr || systemd->journal_directory.empty()) {
      return "its service's state and the journal";
    }
    return "its service's state and the journal in " + systemd->journal_directory;
  }

  CronDialect dialect() const override { return CronDialect::kSystemdCalendar; }
};

}  // namespace

const SourceDescriptor& Descriptor() {
  static const SystemdDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::systemd
