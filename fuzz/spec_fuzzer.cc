// The desired-state spec: YAML text in, a Spec or an error with its position out.
#include "fuzz/fuzz_util.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  auto spec = ParseSpec(fuzz::AsText(data, size), "/fuzz/spec.yaml", BuiltInCatalog());
  if (!spec) return 0;
  // What the exporter and rulegen compute from every job as soon as the spec is loaded.
  for (const JobSpec& job : spec->jobs) {
    job.schedule.Next(kPeriodReference);
    job.schedule.Previous(kPeriodReference);
    job.schedule.Period(kPeriodReference);
    spec->FindJob(job.role);
  }
  return 0;
}
