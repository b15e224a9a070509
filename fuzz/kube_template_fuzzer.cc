// CronJob templates (YAML or JSON) as reconcile reads them before a POST, for a source with one
// namespace and for one watching all.
#include "fuzz/fuzz_util.h"
#include "sources/kubernetes/kubernetes_repairer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  static const JobSpec job =
      fuzz::MakeJob("{type: kubernetes, namespaces: [batch]}", "nightly-export", "30 2 * * *");
  std::string_view text = fuzz::AsText(data, size);
  kubernetes::ReadCronJobTemplate(text, job, {"batch"});
  kubernetes::ReadCronJobTemplate(text, job, {});
  return 0;
}
