// The source types built into this build, for parsing specs. Pure (no I/O, no HTTP): the exporter,
// schedwatch_rulegen and the tests decode specs with the same descriptors.
#pragma once

#include <string>

#include "schedwatch/result.h"
#include "schedwatch/source_type.h"
#include "schedwatch/spec.h"

namespace schedwatch {

const SourceCatalog& BuiltInCatalog();

// Reads a spec file (a regular file of at most max_bytes, --config.max-size, through platform's
// capped reader: a FIFO or a device is refused at once) and parses it with the built-in catalog
// as it reads, so that its text is never held whole beside its tree; only the jobs `keep` owns
// are kept (ParseSpec).
Result<Spec> LoadSpecFile(const std::string& path, std::size_t max_bytes = kDefaultMaxSpecBytes,
                          const ShardAssignment& keep = {});

}  // namespace schedwatch
