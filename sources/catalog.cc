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

Result<Spec> LoadSpecFile(const std::string& path, std::size_t max_bytes,
                          const ShardAssignment& keep) {
  std::size_t size = 0;
  platform::ReadFailure failure = platform::ReadFailure::kNone;
  std::optional<std::string> read_error;
  // Opened again when the spec must be read twice (its defaults follow its jobs).
  std::optional<platform::UniqueFd> fd;
  auto open = [&]() -> YamlDocument::Reader {
    fd.reset();
    auto opened = platform::OpenRegularFile(path, max_bytes, &size, &failure);
    if (!opened) {
      read_error = opened.error();
      return [error = opened.error()](char*, std::size_t) -> Result<std::size_t> {
        return Error{error};
      };
    }
    fd = std::move(*opened);
    return [&, total = std::size_t{0}](char* buffer, std::size_t want) mutable {
      auto n = platform::ReadPiece(fd->get(), path, buffer, want, max_bytes, &total, &failure);
      if (!n) read_error = n.error();
      return n;
    };
  };
  // The first open sizes the tree; a file that cannot be opened is said as it was before.
  YamlDocument::Reader first = open();
  bool opened_once = false;
  Result<Spec> spec = Error{""};
  if (!read_error)
    spec = ParseSpec(
        [&] {
          if (!opened_once) {
            opened_once = true;
            return std::move(first);
          }
          return open();
        },
        size, path, BuiltInCatalog(), keep);
  if (!read_error) return spec;
  if (failure == platform::ReadFailure::kTooLarge) *read_error += " (--config.max-size)";
  return Error{*read_error};
}

}  // namespace schedwatch
