// The source types built into this build, for parsing specs. Pure (no I/O, no HTTP): the exporter,
// schedwatch_rulegen and the tests decode specs with the same descriptors.
#pragma once

#include "schedwatch/source_type.h"

namespace schedwatch {

const SourceCatalog& BuiltInCatalog();

}  // namespace schedwatch
