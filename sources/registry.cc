#include <fmt/format.h>

#include <map>

#include "sources/module.h"
#include "sources/source.h"

namespace schedwatch {

#define SCHEDWATCH_SOURCE_TYPE(name) \
  namespace name {                   \
  SourceModule Module();             \
  }
#include "sources/source_types.def"
#undef SCHEDWATCH_SOURCE_TYPE

const SourceModule* FindSourceModule(std::string_view type) {
  static const auto* modules = [] {
    auto* built_in = new std::map<std::string, SourceModule, std::less<>>;
#define SCHEDWATCH_SOURCE_TYPE(name) built_in->emplace(#name, name::Module());
#include "sources/source_types.def"
#undef SCHEDWATCH_SOURCE_TYPE
    return built_in;
  }();
  auto it = modules->find(type);
  return it == modules->end() ? nullptr : &it->second;
}

Result<std::unique_ptr<Source>> MakeSource(const SourceOptions& options) {
  const SourceModule* module = FindSourceModule(options.spec->type);
  if (module == nullptr) {
    return Error{
        fmt::format("source type \"{}\" is not built into this exporter", options.spec->type)};
  }
  return module->make_source(options);
}

}  // namespace schedwatch
