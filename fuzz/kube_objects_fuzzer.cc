// CronJobList and JobList pages as the API server answers them, the snapshot built from them,
// and error bodies (Status objects). Each page is also streamed, cut at points the input
// chooses, and must read exactly as the whole page does.
#include <fmt/format.h>

#include <unordered_map>

#include "fuzz/fuzz_util.h"
#include "schedwatch/classify.h"
#include "sources/kubernetes/kube_objects.h"

namespace {

using namespace schedwatch;
using namespace schedwatch::kubernetes;

std::string Render(const Mapped<CronJob>& m) {
  std::string text = m.key;
  if (m.value) {
    const CronJob& c = *m.value;
    text +=
        fmt::format(" {} {} {} {} {} {} {} {} {}", c.uid, c.object.id(), c.object.role(),
                    c.object.schedule(), c.object.timezone(), c.object.spec_version(),
                    c.object.enabled, c.last_schedule.value_or(-1), c.last_successful.value_or(-1));
    for (const auto& uid : c.active_job_uids) text += " " + uid;
  }
  if (m.problem) text += " problem " + m.problem->message;
  return text;
}

std::string Render(const Mapped<Job>& m) {
  std::string text = m.key + " " + m.owner;
  if (m.value) {
    const Job& j = *m.value;
    text += fmt::format(" {} {} {} {} {} {}", j.uid, j.owner_uid, static_cast<int>(j.state),
                        j.reason, j.started, j.finished.value_or(-1));
  }
  if (m.problem) text += " problem " + m.problem->message;
  return text;
}

template <typename T>
std::string Render(const Result<Page<T>>& page, const std::vector<std::string>& items) {
  if (!page) return "error";
  std::string text =
      page->continue_token + "|" + page->resource_version + "|" + std::to_string(page->listed);
  for (const auto& item : items) text += "\n" + item;
  return text;
}

// The page fed in pieces whose sizes come from `cuts`, read to the same text as Render's.
template <typename T, typename Start>
std::string Streamed(std::string_view text, std::string_view cuts, Start start) {
  std::vector<std::string> items;
  PageStream stream = start([&items](Mapped<T> m) { items.push_back(Render(m)); });
  std::size_t at = 0, next = 0;
  while (at < text.size()) {
    std::size_t piece = next < cuts.size() ? static_cast<unsigned char>(cuts[next++]) % 17 : 4096;
    if (!stream.Feed(text.substr(at, piece))) break;
    at += piece;
  }
  auto end = stream.Finish();
  if (!end) return "error";
  Result<Page<T>> page = Page<T>{{}, end->continue_token, end->resource_version, {}, end->listed};
  return Render(page, items);
}

template <typename T, typename Read>
std::string Whole(std::string_view text, Read read) {
  std::vector<std::string> items;
  auto page = read(text, [&items](Mapped<T> m) { items.push_back(Render(m)); });
  return Render(page, items);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const JobSpec job = fuzz::MakeJob("{type: kubernetes}", "db-backup", "0 3 * * *");
  std::string_view text = fuzz::AsText(data, size);
  // The first bytes choose the cuts when the input says so (a byte 0xFF, then their count).
  std::string_view cuts;
  if (size > 2 && data[0] == 0xFF && data[1] < size - 2) {
    cuts = text.substr(2, data[1]);
    text = text.substr(2 + data[1]);
  } else {
    cuts = text.substr(0, std::min<std::size_t>(size, 64));
  }
  if (Whole<CronJob>(text, ReadCronJobList) !=
      Streamed<CronJob>(text, cuts, [](auto on_item) { return StreamCronJobList(on_item); })) {
    std::abort();
  }
  if (Whole<Job>(text, ReadOwnedJobList) !=
      Streamed<Job>(text, cuts, [](auto on_item) { return StreamOwnedJobList(on_item); })) {
    std::abort();
  }
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
