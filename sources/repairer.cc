#include "sources/repairer.h"

#include <fmt/format.h>

#include "sources/module.h"

namespace schedwatch {

Result<std::unique_ptr<Repairer>> MakeRepairer(const SourceSpec& source) {
  const SourceModule* module = FindSourceModule(source.type);
  if (module != nullptr && module->make_repairer) return module->make_repairer(source);
  if (module != nullptr && !module->not_repairable.empty()) {
    return Error{fmt::format("not repairable: {}", module->not_repairable)};
  }
  return Error{fmt::format("not repairable: reconcile cannot create {} objects", source.type)};
}

}  // namespace schedwatch
