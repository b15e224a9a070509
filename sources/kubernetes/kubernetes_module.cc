#include "sources/kubernetes/kubernetes_discoverer.h"
#include "sources/kubernetes/kubernetes_source.h"
#include "sources/module.h"

namespace schedwatch::kubernetes {

SourceModule Module() {
  return {MakeKubernetesSource, MakeKubernetesRepairer, "", MakeKubernetesDiscoverer};
}

}  // namespace schedwatch::kubernetes
