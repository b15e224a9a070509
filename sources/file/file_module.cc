#include "sources/file/file_source.h"
#include "sources/module.h"

namespace schedwatch::file {

SourceModule Module() { return {MakeFileSource, nullptr, ""}; }

}  // namespace schedwatch::file
