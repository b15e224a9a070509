// The file source's live-state snapshots (YAML or JSON), then classified for a job as a refresh
// would.
#include "fuzz/fuzz_util.h"
#include "schedwatch/classify.h"
#include "sources/file/file_source.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  static const JobSpec job = fuzz::MakeJob("{type: file, path: live.yaml}", "gate", "*/5 * * * *");
  auto snapshot = ParseSnapshot(fuzz::AsText(data, size), fuzz::kNow);
  if (!snapshot) return 0;
  RoleObservation observation;
  observation.source_up = true;
  for (const LiveObject& object : snapshot->objects) {
    if (object.role() == job.role) observation.objects.push_back(object);
  }
  if (auto it = snapshot->history.find(job.role); it != snapshot->history.end()) {
    observation.history = it->second;
  }
  if (auto it = snapshot->progress.find(job.role); it != snapshot->progress.end()) {
    observation.last_progress = it->second;
  }
  Classify(job, observation, fuzz::kNow);
  return 0;
}
