// Workflow files: their on.schedule entries and spec_version marker, and the live object made
// of them for a job (with the drift check that parses each entry's cron).
#include "fuzz/fuzz_util.h"
#include "sources/github_actions/github_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::github;
  static const JobSpec job = fuzz::MakeJob("{type: github_actions, repository: acme/widgets}",
                                           "nightly", "0 3 * * *", "workflow: nightly.yml");
  auto file = ParseWorkflowFile(fuzz::AsText(data, size));
  if (!file) return 0;
  Workflow workflow{1, "nightly", ".github/workflows/nightly.yml", "active"};
  Drifted(job, MakeLiveObject(workflow, &*file, job));
  return 0;
}
