// kubernetes: the template is a batch/v1 CronJob manifest in YAML (or JSON), POSTed to its
// namespace. Its fixed metadata.name is what keeps two creators from making two CronJobs: the
// second POST gets 409 AlreadyExists, and reconcile re-reads instead of failing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"

namespace schedwatch::kubernetes {

struct CronJobTemplate {
  std::string namespace_name;
  std::string name;
  std::string json;  // the request body
};

// Reads and checks a template for `job`, pure: YAML into JSON (plain scalars typed as YAML 1.2's
// core schema: true/false, integers, floats, null; anything quoted is a string), then the
// object must be a batch/v1 CronJob with a fixed name, no server-set fields, a namespace the
// source watches (`namespaces`, empty for all; metadata.namespace may be left out when there
// is exactly one), and, read by the same parser as live CronJobs, this job's role label,
// spec-version annotation, schedule and time zone, not suspended.
Result<CronJobTemplate> ReadCronJobTemplate(std::string_view text, const JobSpec& job,
                                            const std::vector<std::string>& namespaces);

}  // namespace schedwatch::kubernetes
