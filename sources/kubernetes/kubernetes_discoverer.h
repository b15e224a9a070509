// `discover` for Kubernetes: every CronJob the source may see, labelled or not, with the
// kubectl commands that label and annotate the ones without a role.
#pragma once

#include <memory>
#include <string>

#include "sources/discoverer.h"
#include "sources/kubernetes/kubernetes_source.h"

namespace schedwatch::kubernetes {

class KubernetesDiscoverer : public Discoverer {
 public:
  // `kubeconfig_given`: the spec block names its kubeconfig, so the commands name it too.
  KubernetesDiscoverer(Settings settings, Tuning tuning, bool kubeconfig_given = false);
  Result<Discovery> Discover(const ListContext& context) override;
  // `kubectl label` and `kubectl annotate`, with the source's kubeconfig and context.
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override;

 private:
  Settings settings_;
  Tuning tuning_;
  bool kubeconfig_given_ = false;
};

// A discoverer reading as the spec block's source would.
Result<std::unique_ptr<Discoverer>> MakeDiscoverer(const SourceOptions& options, Tuning tuning);

}  // namespace schedwatch::kubernetes

namespace schedwatch {

Result<std::unique_ptr<Discoverer>> MakeKubernetesDiscoverer(const SourceOptions& options);

}  // namespace schedwatch
