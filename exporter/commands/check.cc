#include "exporter/commands/check.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "schedwatch/duration.h"
#include "schedwatch/shard.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

std::vector<std::string> NextFires(const JobSpec& job, std::int64_t from, int count) {
  std::vector<std::string> out;
  std::optional<std::int64_t> fire = from;
  for (int i = 0; i < count; ++i) {
    fire = job.schedule.Next(*fire);
    if (!fire) break;
    out.push_back(FormatRfc3339(*fire, job.schedule.zone()));
  }
  return out;
}

std::string Seconds(const std::optional<std::int64_t>& value) {
  return value ? FormatDuration(*value) : "none";
}

// Several OnCalendar expressions, one per line under the first.
std::string Lines(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\n               ") : std::string(1, c);
  return out;
}

}  // namespace

void RenderCheckText(const Spec& spec, std::int64_t from, int count, std::uint32_t total_shards,
                     std::ostream& stream) {
  stream << fmt::format("{}: valid, {} sources, {} jobs\n", spec.file, spec.sources.size(),
                        spec.jobs.size());
  if (total_shards > 0) {
    std::vector<std::size_t> roles(total_shards);
    for (const auto& job : spec.jobs) ++roles[ShardAssignment::Of(job.role, total_shards)];
    for (std::uint32_t k = 0; k < total_shards; ++k) {
      stream << fmt::format("shard {} of {}: {} roles\n", k, total_shards, roles[k]);
    }
  }
  // Written a job at a time: the text of 1,000,000 jobs is 250 MB.
  std::string out;
  for (const auto& job : spec.jobs) {
    out.clear();
    out += fmt::format(
        "\n{} (source {}, {})\n  schedule     {} in {}\n  period       {}\n"
        "  stale_after  {}{}\n  max_runtime  {}\n",
        job.role, job.source, job.source_type, Lines(job.schedule.text()), job.timezone,
        Seconds(job.period), Seconds(job.stale_after),
        job.stale_after_overridden ? " (set in the spec)" : "", FormatDuration(job.max_runtime));
    if (total_shards > 0) {
      out += fmt::format("  shard        {} of {}\n", ShardAssignment::Of(job.role, total_shards),
                         total_shards);
    }
    auto fires = NextFires(job, from, count);
    // With --count 0 nothing was asked for; only an expression that never fires has no next.
    if (fires.empty() && count > 0 && job.schedule.is_monotonic()) {
      out +=
          "  next         none (a monotonic timer has no fire times: the manager's next elapse "
          "is watched)\n";
    } else if (fires.empty() && count > 0 && job.schedule.expression().every() > 0) {
      out += "  next         none (an interval: each run follows the last one)\n";
    } else if (fires.empty() && count > 0) {
      out += "  next         none (runs at boot only)\n";
    }
    for (std::size_t i = 0; i < fires.size(); ++i) {
      out += fmt::format("  {}{}\n", i == 0 ? "next         " : "             ", fires[i]);
    }
    stream << out;
  }
}

void RenderCheckJson(const Spec& spec, std::int64_t from, int count, std::uint32_t total_shards,
                     std::ostream& stream) {
  // {"jobs": [...]} as json::dump(2) writes it, a job at a time: the whole document of 1,000,000
  // jobs as one json value took 3.6 GB.
  if (spec.jobs.empty()) {
    nlohmann::json out{{"jobs", nlohmann::json::array()}};
    if (total_shards > 0) out["total_shards"] = total_shards;
    stream << out.dump(2) << "\n";
    return;
  }
  stream << "{\n  \"jobs\": [\n";
  for (std::size_t i = 0; i < spec.jobs.size(); ++i) {
    const JobSpec& job = spec.jobs[i];
    auto seconds = [](const std::optional<std::int64_t>& v) {
      return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
    };
    nlohmann::json item = {{"role", job.role},
                           {"source", job.source},
                           {"schedule", job.schedule.text()},
                           {"timezone", job.timezone},
                           {"period_seconds", seconds(job.period)},
                           {"stale_after_seconds", seconds(job.stale_after)},
                           {"max_runtime_seconds", job.max_runtime},
                           {"next", NextFires(job, from, count)}};
    if (total_shards > 0) item["shard"] = ShardAssignment::Of(job.role, total_shards);
    std::string text = item.dump(2);
    std::string indented = "    ";
    for (char c : text) {
      indented += c;
      if (c == '\n') indented += "    ";
    }
    stream << indented << (i + 1 < spec.jobs.size() ? ",\n" : "\n");
  }
  stream << "  ]";
  if (total_shards > 0) stream << ",\n  \"total_shards\": " << total_shards;
  stream << "\n}\n";
}

}  // namespace schedwatch
