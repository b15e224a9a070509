// gitlab: the template is a pipeline schedule in YAML, the attributes GitLab's
// POST /projects/:id/pipeline_schedules takes and the schedule's variables:
//
//   description: "Nightly export [schedwatch: role=nightly spec_version=2]"
//   ref: main
//   cron: "0 3 * * *"
//   cron_timezone: Europe/Berlin
//   active: true
//   variables:
//     - {key: EXPORT_TARGET, value: "s3://exports", variable_type: env_var}
//
// GitLab gives a schedule no name of ours, so nothing stops a second creator but the reconcile
// lock and the read just before writing; a duplicate shows as `duplicate` and is never deleted.
//
// A schedule is made in steps a later run resumes when one is interrupted (a kill, a failed
// request): created inactive under its pending description (the marker's "schedwatch:" written
// "schedwatch-pending:", so the source does not count it and the role stays missing), then its
// variables, then one PUT gives it its description and makes it active. The next run finds the
// pending schedule by its description and carries on from where it stopped: no duplicate, and
// it never runs without its variables.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"
#include "sources/repairer.h"

namespace schedwatch::gitlab {

struct ScheduleTemplate {
  std::string pending_description;  // the description while it is made (no marker)
  std::string form;    // the POST body, application/x-www-form-urlencoded: pending, inactive
  std::string finish;  // the PUT body that completes it: the description, active
  std::vector<std::pair<std::string, std::string>> variables;  // key, POST body
};

// The description a schedule has while it is made: the marker's "schedwatch:" written
// "schedwatch-pending:".
std::string PendingDescription(std::string_view description);

// Reads and checks a template for `job`, pure: a mapping of the keys above (others refused),
// read by the same mapping as live schedules, which must give this job's role, spec version,
// schedule, time zone and `desired_ref` (when set), active.
Result<ScheduleTemplate> ReadScheduleTemplate(std::string_view text, const JobSpec& job,
                                              const std::string& desired_ref);

Result<std::unique_ptr<Repairer>> MakeGitLabRepairer(const SourceSpec& source);

}  // namespace schedwatch::gitlab
