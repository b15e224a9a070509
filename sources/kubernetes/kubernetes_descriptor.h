// The `kubernetes` source type as the spec sees it: its settings, decoded without I/O.
#pragma once

#include <string>
#include <vector>

#include "schedwatch/source_type.h"

namespace schedwatch::kubernetes {

inline constexpr int kMaxPageSize = 10000;

struct KubernetesSettings : SourceSettings {
  // As written, relative ones anchored at the spec; "~/" is expanded and the default
  // ($KUBECONFIG's first entry, else ~/.kube/config) found when the source is made.
  std::string kubeconfig;
  std::string context;  // empty: current-context
  bool in_cluster = false;
  std::vector<std::string> namespaces;  // each once; empty: all
  int page_size = 500;                  // items per list request
};

bool IsNamespaceName(const std::string& name);

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::kubernetes
