// GitLab REST answers: a page of pipeline schedules, a page of pipelines, error bodies, the
// pagination headers and a schedule template, all from the same text.
#include <cctype>
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"
#include "sources/gitlab/gitlab_mapping.h"
#include "sources/gitlab/gitlab_repairer.h"
#include "sources/token.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::gitlab;
  static const Spec spec = *ParseSpec(R"(version: 1
sources: {ci: {type: gitlab, project: acme/widgets, ref: main}}
jobs:
  - {role: nightly, source: ci, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "2"}
)",
                                      "/spec.yaml", BuiltInCatalog());
  const JobSpec& job = spec.jobs[0];
  std::string_view text = fuzz::AsText(data, size);
  ProblemSink problems;
  if (auto page = ParseSchedulePage(text, problems)) {
    for (const auto& schedule : page->schedules) {
      LiveObject object = MakeLiveObject(schedule, job, "main");
      Drifted(job, object);
      InactiveReason(schedule);
    }
    // At most a page, each item readable or counted once.
    if (page->listed > kSchedulesPerPage || problems.Total() != page->unreadable ||
        page->schedules.size() + page->unreadable != page->listed) {
      std::abort();
    }
    for (const auto& schedule : page->schedules) {
      if (schedule.cron.size() > 4 * kMaxTextChars || schedule.ref.size() > 4 * kMaxTextChars)
        std::abort();
    }
  }
  if (auto page = ParsePipelinePage(text, "schedule 1")) {
    if (page->listed > kPipelinesPerPage) std::abort();
    RunHistory history;
    for (const auto& pipeline : page->pipelines) AddPipeline(history, pipeline);
  }
  ErrorMessage(text);
  // No run of 8 of the token's characters, in any case, survives its redaction.
  static const std::string kToken = "glpat-fuzzTOKEN0123456789";
  std::string redacted = RedactToken(text.substr(0, 4096), kToken);
  for (char& c : redacted) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t at = 0; at + kMinRedactedRun <= kToken.size(); ++at) {
    std::string piece = kToken.substr(at, kMinRedactedRun);
    for (char& c : piece) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (redacted.find(piece) != std::string::npos) std::abort();
  }
  DescriptionMarker(text);
  IanaZone(text);
  const std::string url = "https://gitlab.test/api/v4/projects/1/pipeline_schedules?page=1";
  std::string next = NextPageUrl(url, {{"x-next-page", std::string(text)}});
  NextPageUrl(url, {{"link", std::string(text)}});
  if (!next.empty() && next.rfind("https://gitlab.test/", 0) != 0) std::abort();
  ReadScheduleTemplate(text, job, "main");
  return 0;
}
