// sidekiq_cron: the template is one job of config/schedule.yml, with its name:
//
//   name: nightly_export
//   cron: "0 3 * * * Europe/Berlin"
//   class: ExportWorker                  # or klass
//   queue: exports                       # default: default
//   args: [s3://exports]                 # optional
//   description: "Nightly export [schedwatch: role=nightly spec_version=2]"
//
// reconcile writes it as Sidekiq-cron 1.8's Job#save does: the hash cron_job:NAME with the
// fields of Job#to_hash, and cron_job:NAME added to the set cron_jobs (under the source's
// namespace), in one MULTI/EXEC under WATCH of the hash, so a job written meanwhile by anyone
// (Sidekiq reloading its schedule) is never overwritten: the transaction is dropped.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"
#include "sources/repairer.h"

namespace schedwatch::sidekiq_cron {

struct JobTemplate {
  std::string name;
  std::vector<std::pair<std::string, std::string>> fields;  // the hash, in Job#to_hash's order
};

// Reads and checks a template for `job`, pure: a mapping of the keys above (others refused),
// whose description carries the job's marker, with the job's cron, zone and spec version (a
// cron without a zone suffix runs in `local_zone`), and no `status` but enabled.
Result<JobTemplate> ReadJobTemplate(std::string_view text, const JobSpec& job,
                                    const std::string& local_zone);

Result<std::unique_ptr<Repairer>> MakeSidekiqCronRepairer(const SourceSpec& source);

}  // namespace schedwatch::sidekiq_cron
