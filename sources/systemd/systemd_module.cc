#include "sources/module.h"

namespace schedwatch::systemd {

// No source yet: the systemd source (sd-bus, the journal) fills this in.
SourceModule Module() { return {nullptr, nullptr, ""}; }

}  // namespace schedwatch::systemd
