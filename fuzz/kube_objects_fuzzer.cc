// CronJobList and JobList pages as the API server answers them, the snapshot built from them,
// and error bodies (Status objects).
#include <unordered_map>

#include "fuzz/fuzz_util.h"
#include "schedwatch/classify.h"
#include "sources/kubernetes/kube_objects.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::kubernetes;
  static const JobSpec job = fuzz::MakeJob("{type: kubernetes}", "db-backup", "0 3 * * *");
  std::string_view text = fuzz::AsText(data, size);
  std::vector<CronJob> cronjobs;
  if (auto page = ParseCronJobList(text)) cronjobs = std::move(page->items);
  // The owners of the Job fixtures' Jobs, so that a JobList input has CronJobs to belong to.
  for (const char* uid :
       {"5b1c2a9e-0001-4c61-9a0e-2f7b8c1d4e01", "9d7e4410-0002-4f0b-8c55-71aa30c2b9e7",
        "7c2d0000-0003-4000-8000-00000000c1ea", "00000000-0004-4000-8000-000000000004"}) {
    CronJob owner;
    owner.uid = uid;
    owner.object = {std::string("batch/") + uid, "db-backup", "0 3 * * *", "UTC", "3", true};
    cronjobs.push_back(owner);
  }
  std::unordered_map<std::string, std::size_t> owners;
  for (std::size_t i = 0; i < cronjobs.size(); ++i) owners.emplace(cronjobs[i].uid, i);
  std::vector<Job> jobs;
  if (auto page = ParseJobList(text, owners)) jobs = std::move(page->items);
  SourceSnapshot snapshot = BuildSnapshot(cronjobs, jobs);
  for (const LiveObject& object : snapshot.objects) Drifted(job, object);
  DescribeApiError(403, text);
  DescribeApiError(500, text, "create on cronjobs");
  StatusReason(text);
  return 0;
}
