// The `file` source type as the spec sees it: a live-state snapshot's path.
#pragma once

#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch::file {

struct FileSettings : SourceSettings {
  std::string path;  // a live-state snapshot, YAML or JSON
};

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::file
