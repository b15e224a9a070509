#include "sources/catalog.h"

#include <optional>

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

Result<Spec> LoadSpecFile(const std::string& path, std::size_t max_bytes) {
  std::size_t size = 0;
  platform::ReadFailure failure = platform::ReadFailure::kNone;
  auto fd = platform::OpenRegularFile(path, max_bytes, &size, &failure);
  std::optional<std::string> read_error;
  Result<Spec> spec = Error{""};
  if (fd) {
    std::size_t total = 0;
    spec = ParseSpec(
        [&](char* buffer, std::size_t want) {
          auto n = platform::ReadPiece(fd->get(), path, buffer, want, max_bytes, &total, &failure);
          if (!n) read_error = n.error();
          return n;
        },
        size, path, BuiltInCatalog());
  } else {
    read_error = fd.error();
  }
  if (!read_error) return spec;
  if (failure == platform::ReadFailure::kTooLarge) *read_error += " (--config.max-size)";
  return Error{*read_error};
}

}  // namespace schedwatch
