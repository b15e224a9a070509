#include "sources/kubernetes/kubernetes_source.h"
#include "sources/module.h"

namespace schedwatch::kubernetes {

SourceModule Module() { return {MakeKubernetesSource, MakeKubernetesRepairer, ""}; }

}  // namespace schedwatch::kubernetes
