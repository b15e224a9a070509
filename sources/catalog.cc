#include "sources/catalog.h"

#include "schedwatch/platform/file.h"

namespace schedwatch {

#define SCHEDWATCH_SOURCE_TYPE(name)    \
  namespace name {                      \
  const SourceDescriptor& Descriptor(); \
  }
#include "sources/source_types.def"
#undef SCHEDWATCH_SOURCE_TYPE

const SourceCatalog& BuiltInCatalog() {
  static const SourceCatalog* catalog = [] {
    auto* built_in = new SourceCatalog;
#define SCHEDWATCH_SOURCE_TYPE(name) built_in->Add(name::Descriptor());
#include "sources/source_types.def"
#undef SCHEDWATCH_SOURCE_TYPE
    return built_in;
  }();
  return *catalog;
}

Result<Spec> LoadSpecFile(const std::string& path) {
  auto text = platform::ReadRegularFile(path, kMaxSpecBytes);
  if (!text) return Error{text.error()};
  return ParseSpec(*text, path, BuiltInCatalog());
}

}  // namespace schedwatch
