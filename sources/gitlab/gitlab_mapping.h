// Pure mapping of GitLab REST answers (pipeline schedules and their pipelines) to schedwatch's
// live objects and run history. No I/O, no clock: the source (gitlab_source.h) fetches, these
// functions read what it fetched.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "schedwatch/spec.h"
#include "sources/api_answers.h"
#include "sources/marker.h"
#include "sources/problems.h"
#include "sources/source.h"

namespace schedwatch::gitlab {

// The pages asked for: GitLab's maximum of schedules; of pipelines, the newest hold the last
// start, the running ones and usually the latest success. A page holding more is refused.
inline constexpr std::size_t kSchedulesPerPage = 100;
inline constexpr std::size_t kPipelinesPerPage = 20;
// GitLab's own limit on a schedule's description, ref, cron and cron_timezone: a longer one
// is no schedule GitLab wrote, a malformed_object never kept.
inline constexpr std::size_t kMaxTextChars = 255;

// One item of GET /projects/:id/pipeline_schedules.
struct PipelineSchedule {
  std::int64_t id = 0;
  std::string description;
  std::string ref;  // "main" or "refs/heads/main" (GitLab 16.x and later write full refs)
  std::string cron;
  std::string cron_timezone;  // an IANA name or a Rails one ("Pacific Time (US & Canada)")
  bool active = true;
  std::optional<std::int64_t> next_run_at;
  std::string owner;        // the owner's username; empty when the schedule has none
  std::string owner_state;  // "active", "blocked", "deactivated", ...; empty when unsaid
  std::optional<Result<Marker>> marker;  // from the description; nullopt: not schedwatch's
};

struct SchedulePage {
  std::vector<PipelineSchedule> schedules;
  std::size_t listed = 0;      // items on the page, readable or not
  std::size_t unreadable = 0;  // of them, each counted in `problems`
};
// The `page`th page of schedules; an unreadable item is a problem added to `problems` (which
// lists a few and counts the rest). An Error when the answer is not a JSON array or holds more
// than kSchedulesPerPage items.
Result<SchedulePage> ParseSchedulePage(std::string_view body, ProblemSink& problems, int page = 1);

// The marker in a description (sources/marker.h).
using schedwatch::DescriptionMarker;
using schedwatch::DescriptionWithMarker;

// "refs/heads/main" and "main" are one branch; "refs/tags/v1" and "v1" one tag.
std::string ShortRef(std::string_view ref);

// The IANA name of a cron_timezone GitLab accepts: an IANA name as it is, a Rails name
// ("Pacific Time (US & Canada)") through ActiveSupport's table; empty when neither.
std::string IanaZone(std::string_view cron_timezone);
// The Rails name's IANA zone (gitlab_time_zones.cc); empty for another name.
std::string RailsZoneToIana(std::string_view name);

// The live object of a marked schedule for `job`. A ref that differs from `desired_ref` (when
// set) is drift (other_drift); a Rails time zone name is given as its IANA name.
LiveObject MakeLiveObject(const PipelineSchedule& schedule, const JobSpec& job,
                          const std::string& desired_ref);

// Why a schedule is inactive, for people: GitLab deactivates a schedule whose owner can no
// longer run pipelines (blocked, removed from the project, or gone).
std::string InactiveReason(const PipelineSchedule& schedule);

// One pipeline of GET .../pipeline_schedules/:id/pipelines.
struct Pipeline {
  std::int64_t id = 0;
  std::int64_t created = 0;
  std::optional<std::int64_t> finished;  // updated_at once the status is final
  api::RunState state = api::RunState::kRunning;
  std::string web_url = {};  // the pipeline's page
};
struct PipelinePage {
  std::vector<Pipeline> pipelines;
  std::vector<SourceProblem> problems;  // at most one per item
  std::size_t listed = 0;
};
// `what` names the schedule in problem messages. An Error when the answer is not a JSON array
// or holds more than kPipelinesPerPage items.
Result<PipelinePage> ParsePipelinePage(std::string_view body, const std::string& what);
void AddPipeline(RunHistory& history, const Pipeline& pipeline);

// GitLab's error answer worded for a message: `message` ("404 Project Not Found"), or
// `error_description`/`error` (an OAuth scope error), shortened and printable; empty for a body
// that says nothing readable (a proxy's HTML page).
std::string ErrorMessage(std::string_view body);

// The next page's URL: the Link header's rel="next", else `page`=x-next-page on `url`; empty on
// the last page. `headers` keys are lower case.
std::string NextPageUrl(const std::string& url, const std::map<std::string, std::string>& headers);

}  // namespace schedwatch::gitlab
