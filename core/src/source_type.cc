#include "schedwatch/source_type.h"

namespace schedwatch {

void ReadCommonSettings(SettingsReader& reader, SourceSettings& settings) {
  if (auto timeout = reader.Wait("timeout")) settings.timeout = *timeout;
  if (auto runs_dir = reader.Path("runs_dir")) {
    if (runs_dir->empty()) reader.Problem("runs_dir", "empty");
    settings.runs_dir = *runs_dir;
  }
}

const std::vector<JobKey>& SourceDescriptor::job_keys() const {
  static const std::vector<JobKey> kNone;
  return kNone;
}

void SourceDescriptor::DecodeJob(SettingsReader& reader, JobSpec& job) const {
  (void)reader;
  (void)job;
}

std::string SourceDescriptor::RefuseJobKey(std::string_view key) const {
  (void)key;
  return "";
}

void SourceCatalog::Add(const SourceDescriptor& descriptor) {
  descriptors_[std::string(descriptor.type())] = &descriptor;
}

const SourceDescriptor* SourceCatalog::Find(std::string_view type) const {
  auto it = descriptors_.find(type);
  return it == descriptors_.end() ? nullptr : it->second;
}

std::vector<std::string> SourceCatalog::Types() const {
  std::vector<std::string> types;
  for (const auto& entry : descriptors_) types.push_back(entry.first);
  return types;
}

}  // namespace schedwatch
