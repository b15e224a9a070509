#include "sources/file/file_source.h"
#include "sources/module.h"

namespace schedwatch::file {

Result<std::unique_ptr<Discoverer>> MakeFileDiscoverer(const SourceOptions& options);

SourceModule Module() { return {MakeFileSource, nullptr, "", MakeFileDiscoverer}; }

}  // namespace schedwatch::file
