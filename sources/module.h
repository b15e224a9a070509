// What reads a scheduler, per source type: the I/O half of a source folder, beside its
// descriptor (the spec's half, sources/catalog.h). Both are named once, in source_types.def.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "sources/discoverer.h"
#include "sources/repairer.h"
#include "sources/source.h"

namespace schedwatch {

using RepairerFactory = std::function<Result<std::unique_ptr<Repairer>>(const SourceSpec&)>;

struct SourceModule {
  SourceFactory make_source;
  RepairerFactory make_repairer;  // empty: reconcile cannot create this type's objects
  std::string not_repairable;     // then why, when it is not the plain "cannot create"
  // What `discover` reads this type with (sources/discoverer.h); empty: it cannot.
  DiscovererFactory make_discoverer = nullptr;  // a default: modules may leave it out
};

// The module of a built-in type, or nullptr.
const SourceModule* FindSourceModule(std::string_view type);

}  // namespace schedwatch
