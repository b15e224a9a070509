#include "sources/celery_beat/celery_beat_descriptor.h"

#include <algorithm>
#include <cctype>

namespace schedwatch::celery_beat {
namespace {

std::string Lower(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower;
}

class CeleryBeatDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "celery_beat"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{
        {"dsn"}, {"dsn_file"}, {"timeout"}, {"beat_lag"}, {"repair_dsn_file"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<CeleryBeatSettings>();
    ReadCommonSettings(reader, *settings);
    settings->dsn = reader.String("dsn").value_or("");
    settings->dsn_file = reader.Path("dsn_file").value_or("");
    settings->repair_dsn_file = reader.Path("repair_dsn_file").value_or("");
    if (auto lag = reader.Wait("beat_lag")) settings->beat_lag = *lag;
    if (reader.Has("dsn") == reader.Has("dsn_file")) {
      reader.Problem(reader.Has("dsn") ? "dsn_file" : "dsn", "set exactly one of dsn and dsn_file");
    } else if (reader.Has("dsn") && settings->dsn.empty()) {
      reader.Problem("dsn", "empty");
    } else if (DsnHasPassword(settings->dsn)) {
      // Never echoed: the message names the key, not the value.
      reader.Problem("dsn",
                     "holds a password, which the spec would show to everyone who reads it; "
                     "put the connection string in dsn_file");
    }
    return settings;
  }

  std::string RefuseJobKey(std::string_view key) const override {
    if (key != "runs_dir") return "";
    return "Celery tasks run on Celery's workers, where the exporter cannot read run records";
  }

  std::string RunHistoryOrigin(const SourceSettings&) const override {
    return "last_run_at of django_celery_beat_periodictask";
  }

  CronDialect dialect() const override { return CronDialect::kCelery; }
  DstPolicy dst_policy() const override { return DstPolicy::kCeleryBeat; }
};

}  // namespace

bool DsnHasPassword(std::string_view dsn) {
  const std::string lower = Lower(dsn);
  if (lower.find("password") != std::string::npos) return true;  // keyword or URI parameter
  const std::size_t scheme = lower.find("://");
  if (scheme == std::string::npos) return false;
  const std::size_t authority = scheme + 3;
  const std::size_t at = lower.find('@', authority);
  const std::size_t slash = lower.find('/', authority);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return false;
  return lower.substr(authority, at - authority).find(':') != std::string::npos;
}

const SourceDescriptor& Descriptor() {
  static const CeleryBeatDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::celery_beat
