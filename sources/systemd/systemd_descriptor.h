// The `systemd` source type as the spec sees it: which manager to read (the host's system bus,
// or a bus address) and where its journal is.
#pragma once

#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch::systemd {

struct SystemdSettings : SourceSettings {
  std::string bus_address;        // empty: the host's system bus
  std::string journal_directory;  // empty: the host's journal
};

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::systemd
