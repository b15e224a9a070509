// Sidekiq-cron in Redis: RESP replies within bounds, each read as a job hash with its jid
// history, as retry/dead set members and work set values, and the text as a cron with a zone
// suffix, an enqueue time and a Redis URL, and as a reconcile template.
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "schedwatch/spec.h"
#include "sources/catalog.h"
#include "sources/sidekiq_cron/sidekiq_cron_mapping.h"
#include "sources/sidekiq_cron/sidekiq_cron_repairer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::sidekiq_cron;
  static const Spec spec = *ParseSpec(R"(version: 1
sources: {app: {type: sidekiq_cron}}
jobs:
  - {role: nightly, source: app, schedule: "0 3 * * *", timezone: Europe/Berlin, spec_version: "2"}
)",
                                      "/spec.yaml", BuiltInCatalog());
  const JobSpec& job = spec.jobs[0];
  std::string_view text = fuzz::AsText(data, size);
  constexpr ReplyBounds kBounds{1 << 16, 4096};
  if (auto replies = ParseReplies(text, kBounds)) {
    RedisValue none;
    for (std::size_t i = 0; i < replies->size(); ++i) {
      const RedisValue& reply = (*replies)[i];
      const RedisValue& next = i + 1 < replies->size() ? (*replies)[i + 1] : none;
      if (auto read = ReadJob("nightly", reply, next)) {
        if (read->history.size() > kHistoryRead || read->cron.size() > kMaxTextBytes) std::abort();
        Drifted(job, MakeLiveObject(*read, "nightly", "2", "UTC"));
        JidStates states;
        for (const RedisValue& element : reply.elements) {
          if (auto failed = FailedEntry(element.text)) states.failed.insert(*failed);
          if (auto running = WorkEntry(element.text)) states.running.insert(*running);
        }
        JobHistory(*read, states, 1796432600);
      }
    }
  }
  SplitCron split = SplitZone(text);
  if (split.fields.size() > text.size()) std::abort();
  ParseEnqueueTime(text);
  JobMarker(text, text);
  ParseRedisUrl(text);
  // A template that passes writes Job#to_hash's 13 fields, the job's name first.
  if (auto read = ReadJobTemplate(text, job, "UTC")) {
    if (read->fields.size() != 13 || read->fields[0].second != read->name) std::abort();
  }
  return 0;
}
