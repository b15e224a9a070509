#include "sources/file/file_descriptor.h"

namespace schedwatch::file {
namespace {

class FileDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "file"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{{"path", true}, {"runs_dir"}, {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<FileSettings>();
    ReadCommonSettings(reader, *settings);
    settings->path = reader.Path("path").value_or("");
    return settings;
  }

  std::string RunHistoryOrigin(const SourceSettings& settings) const override {
    const auto* file = dynamic_cast<const FileSettings*>(&settings);
    return file == nullptr ? "its snapshot" : "snapshot " + file->path;
  }

  bool reports_complete_history() const override { return true; }

  // The snapshot is written by whatever scheduler feeds it; its schedules read as Debian cron's.
  CronDialect dialect() const override { return CronDialect::kDebianCron; }
};

}  // namespace

const SourceDescriptor& Descriptor() {
  static const FileDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::file
