#include "sources/kubernetes/kubernetes_discoverer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "sources/kubernetes/kubernetes_descriptor.h"

namespace schedwatch::kubernetes {

KubernetesDiscoverer::KubernetesDiscoverer(Settings settings, Tuning tuning, bool kubeconfig_given)
    : settings_(std::move(settings)),
      tuning_(std::move(tuning)),
      kubeconfig_given_(kubeconfig_given) {
  settings_.every_cronjob = true;
  tuning_.watch = false;
}

Result<Discovery> KubernetesDiscoverer::Discover(const ListContext& context) {
  auto source = MakeSource(settings_, tuning_);
  if (!source) return Error{source.error()};
  auto snapshot = (*source)->List(context);
  if (!snapshot) return Error{snapshot.error()};
  Discovery discovery;
  for (const LiveObject& live : SortedById(snapshot->objects)) {
    FoundObject object = FoundFromLive(live);
    object.suggested_role = live.id().substr(live.id().find('/') + 1);  // the CronJob's name
    if (!live.enabled) object.not_run_because = "suspended (spec.suspend: true)";
    if (auto history = snapshot->history.find(std::string(live.id()));
        history != snapshot->history.end()) {
      AddLongestRun(history->second, /*successes_only=*/true, object);
    }
    discovery.objects.push_back(std::move(object));
  }
  for (const auto& problem : snapshot->problems) {
    discovery.notes.push_back(fmt::format("{}: {}", problem.reason, problem.message));
  }
  return discovery;
}

std::string KubernetesDiscoverer::MarkerInstructions(const FoundObject& object,
                                                     const std::string& role,
                                                     const std::string& spec_version) const {
  std::string namespace_name = object.id.substr(0, object.id.find('/'));
  std::string name = object.id.substr(object.id.find('/') + 1);
  std::string flags;
  if (kubeconfig_given_ && !settings_.kubeconfig.empty()) {
    flags += " --kubeconfig " + ShellWord(settings_.kubeconfig);
  }
  if (!settings_.context.empty()) flags += " --context " + ShellWord(settings_.context);
  flags += " -n " + ShellWord(namespace_name);
  return fmt::format(
      "kubectl{} label cronjob {} schedwatch.io/role={}\n"
      "kubectl{} annotate cronjob {} schedwatch.io/spec-version={}\n",
      flags, ShellWord(name), ShellWord(role), flags, ShellWord(name), ShellWord(spec_version));
}

Result<std::unique_ptr<Discoverer>> MakeDiscoverer(const SourceOptions& options, Tuning tuning) {
  auto settings = ReadSettings(*options.spec, std::getenv("KUBECONFIG"), std::getenv("HOME"));
  if (!settings) return Error{settings.error()};
  const auto* decoded = options.spec->SettingsAs<KubernetesSettings>();
  return std::unique_ptr<Discoverer>(std::make_unique<KubernetesDiscoverer>(
      std::move(*settings), std::move(tuning), decoded != nullptr && !decoded->kubeconfig.empty()));
}

}  // namespace schedwatch::kubernetes

namespace schedwatch {

Result<std::unique_ptr<Discoverer>> MakeKubernetesDiscoverer(const SourceOptions& options) {
  return kubernetes::MakeDiscoverer(options, {});
}

}  // namespace schedwatch
