#include "sources/kubernetes/kubernetes_descriptor.h"

#include <fmt/format.h>

#include <algorithm>

namespace schedwatch::kubernetes {
namespace {

class KubernetesDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "kubernetes"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{{"kubeconfig"}, {"context"},   {"in_cluster"},
                                              {"namespaces"}, {"page_size"}, {"runs_dir"},
                                              {"timeout"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<KubernetesSettings>();
    ReadCommonSettings(reader, *settings);
    settings->kubeconfig = reader.Path("kubeconfig").value_or("");
    settings->context = reader.String("context").value_or("");
    settings->in_cluster = reader.Bool("in_cluster").value_or(false);
    if (settings->in_cluster && (!settings->kubeconfig.empty() || !settings->context.empty())) {
      reader.Problem("in_cluster", "true cannot be combined with kubeconfig or context");
    }
    auto namespaces = reader.List("namespaces").value_or(std::vector<std::string>{});
    for (std::size_t i = 0; i < namespaces.size(); ++i) {
      const std::string& name = namespaces[i];
      if (!IsNamespaceName(name)) {
        reader.ItemProblem("namespaces", i,
                           fmt::format("\"{}\" is not a namespace name (lower-case letters, "
                                       "digits and '-', at most 63 characters)",
                                       name));
      } else if (std::find(settings->namespaces.begin(), settings->namespaces.end(), name) ==
                 settings->namespaces.end()) {
        settings->namespaces.push_back(name);
      }
    }
    if (auto page_size = reader.Integer("page_size", 1, kMaxPageSize)) {
      settings->page_size = static_cast<int>(*page_size);
    }
    return settings;
  }

  std::string RunHistoryOrigin(const SourceSettings&) const override {
    return "Jobs of its CronJob";
  }

  // robfig/cron's standard parser, as the CronJob controller reads schedules.
  CronDialect dialect() const override { return CronDialect::kKubernetes; }
};

}  // namespace

bool IsNamespaceName(const std::string& name) {
  if (name.empty() || name.size() > 63 || name.front() == '-' || name.back() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

const SourceDescriptor& Descriptor() {
  static const KubernetesDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::kubernetes
