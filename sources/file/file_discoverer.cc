// `discover` for a snapshot file: its objects carry their roles already (the snapshot is
// schedwatch's own format), so discover drafts their jobs and has no marker to ask for.
#include <fmt/format.h>

#include "sources/discoverer.h"
#include "sources/file/file_source.h"

namespace schedwatch::file {
namespace {

class FileDiscoverer : public Discoverer {
 public:
  explicit FileDiscoverer(std::unique_ptr<Source> source) : source_(std::move(source)) {}

  Result<Discovery> Discover(const ListContext& context) override {
    auto snapshot = source_->List(context);
    if (!snapshot) return Error{snapshot.error()};
    Discovery discovery;
    for (const LiveObject& live : SortedById(snapshot->objects)) {
      FoundObject object = FoundFromLive(live);
      object.marked = true;  // a snapshot's objects have their roles
      object.suggested_role = live.role();
      if (!live.enabled) object.not_run_because = "disabled in the snapshot";
      discovery.objects.push_back(std::move(object));
    }
    for (const auto& problem : snapshot->problems) {
      discovery.notes.push_back(fmt::format("{}: {}", problem.reason, problem.message));
    }
    return discovery;
  }

  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string&) const override {
    return fmt::format("{}: set its role to {} in the snapshot\n", object.id, role);
  }

 private:
  std::unique_ptr<Source> source_;
};

}  // namespace

Result<std::unique_ptr<Discoverer>> MakeFileDiscoverer(const SourceOptions& options) {
  auto source = MakeFileSource(options);
  if (!source) return Error{source.error()};
  return std::unique_ptr<Discoverer>(std::make_unique<FileDiscoverer>(std::move(*source)));
}

}  // namespace schedwatch::file
