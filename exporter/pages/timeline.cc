#include "exporter/pages/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "exporter/pages/status_page.h"
#include "schedwatch/duration.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

constexpr std::int64_t kDay = 24 * 3600;
constexpr std::int64_t kMaxSpan = 62 * kDay;

struct Style {
  double width, height, left;
  double tick_top, tick_bottom;
  double run_top, run_height;
  std::size_t max_ticks;
  std::size_t max_grace_bands;
};

constexpr Style kLarge{1000, 140, 44, 22, 50, 62, 26, 150, 100};
constexpr Style kSpark{200, 20, 0, 0, 4, 6, 12, 48, 0};

const char* Colour(std::string_view outcome) {
  if (outcome == "succeeded") return "#2e9e4f";
  if (outcome == "failed") return "#d23f31";
  if (outcome == "hung") return "#e08a00";
  return "#2f6fd6";
}

const char* Mark(std::string_view outcome) {
  if (outcome == "succeeded") return "✓";
  if (outcome == "failed") return "✗";
  if (outcome == "hung") return "!";
  return "▶";
}

// Fire times inside the window; `dense` when there are more than `max` (then none are listed).
std::vector<std::int64_t> FireTimes(const JobSpec& job, const TimelineWindow& window,
                                    std::size_t max, bool& dense) {
  std::vector<std::int64_t> fires;
  dense = false;
  if (job.schedule.is_reboot()) return fires;
  std::int64_t span = window.end - window.start;
  // The period is the longest gap, so span / period fire times at least: no need to count them.
  if (job.period && *job.period > 0 && static_cast<std::size_t>(span / *job.period) > max) {
    dense = true;
    return fires;
  }
  std::optional<std::int64_t> fire = job.schedule.Next(window.start - 1);
  while (fire && *fire <= window.end) {
    if (fires.size() == max) {
      dense = true;
      fires.clear();
      return fires;
    }
    fires.push_back(*fire);
    fire = job.schedule.Next(*fire);
  }
  return fires;
}

std::string AxisLabel(std::int64_t time, const date::time_zone* zone) {
  std::string text = FormatRfc3339(time, zone);  // 2026-11-30T21:00:00+09:00
  return text.substr(5, 5) + " " + text.substr(11, 5);
}

}  // namespace

const char* RunOutcomeName(const RecordedRun& run, const JobSpec& job, std::int64_t now) {
  switch (run.outcome) {
    case Run::Outcome::kSucceeded:
      return "succeeded";
    case Run::Outcome::kFailed:
      return "failed";
    case Run::Outcome::kRunning:
      return now - run.started > job.max_runtime ? "hung" : "running";
  }
  return "running";
}

TimelineWindow TimelineWindowFor(const JobSpec& job, std::int64_t now) {
  std::int64_t span = kDay;
  if (job.period) span = std::clamp<std::int64_t>(2 * *job.period, kDay, kMaxSpan);
  return {now - span, now + span / 12};
}

std::string RenderTimelineSvg(const JobSpec& job, const RoleRuns* runs, std::int64_t now,
                              TimelineSize size) {
  const Style& style = size == TimelineSize::kLarge ? kLarge : kSpark;
  const bool large = size == TimelineSize::kLarge;
  TimelineWindow window = TimelineWindowFor(job, now);
  const double plot = style.width - style.left - (large ? 8 : 0);
  auto x = [&](std::int64_t time) {
    time = std::clamp(time, window.start, window.end);
    return style.left + plot * static_cast<double>(time - window.start) /
                            static_cast<double>(window.end - window.start);
  };
  std::string out;
  out.reserve(large ? 8192 : 512);

  // What the picture holds, for its title: runs by outcome.
  int succeeded = 0, failed = 0, going = 0, shown = 0;
  if (runs != nullptr) {
    for (const auto& run : *runs) {
      if (run.finished().value_or(now) < window.start || run.started > window.end) continue;
      ++shown;
      (run.outcome == Run::Outcome::kSucceeded ? succeeded
       : run.outcome == Run::Outcome::kFailed  ? failed
                                               : going)++;
    }
  }
  std::string summary = fmt::format("{}: {} of {} ({} to {}): {} succeeded, {} failed, {} running",
                                    job.role, shown == 1 ? "1 run" : fmt::format("{} runs", shown),
                                    FormatDuration(now - window.start), FormatRfc3339(window.start),
                                    FormatRfc3339(window.end), succeeded, failed, going);
  if (large) {
    out += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" viewBox=\"0 0 {} {}\" "
        "width=\"100%\" role=\"img\" aria-labelledby=\"timeline-title\" font-family=\"sans-serif\" "
        "font-size=\"11\"><title id=\"timeline-title\">{}</title>\n",
        style.width, style.height, EscapeHtml(summary));
    out += fmt::format(
        "<text x=\"0\" y=\"40\" fill=\"#5b6472\">fires</text><text x=\"0\" y=\"79\" "
        "fill=\"#5b6472\">runs</text><line x1=\"{0}\" y1=\"110\" x2=\"{1}\" y2=\"110\" "
        "stroke=\"#d8dde6\"/>\n",
        style.left, style.left + plot);
  } else {
    out += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"spark\" viewBox=\"0 0 {0} {1}\" "
        "width=\"{0}\" height=\"{1}\" preserveAspectRatio=\"none\" role=\"img\"><title>{2}</title>",
        style.width, style.height, EscapeHtml(summary));
  }

  bool dense = false;
  std::vector<std::int64_t> fires = FireTimes(job, window, style.max_ticks, dense);
  if (large && dense) {
    // Too many to draw: those not_started looks at and the next one still show.
    std::optional<std::int64_t> fire = job.schedule.Previous(now);
    for (int i = 0; fire && i < job.missed_starts && *fire >= window.start; ++i) {
      fires.insert(fires.begin(), *fire);
      fire = job.schedule.Previous(*fire - 1);
    }
    if (auto next = job.schedule.Next(now); next && *next <= window.end) fires.push_back(*next);
  }
  if (large) {
    // Start grace: every fire time's when few, else those not_started looks at and the next.
    std::vector<std::int64_t> graced;
    if (fires.size() <= style.max_grace_bands) {
      graced = fires;
    } else {
      auto next = std::upper_bound(fires.begin(), fires.end(), now);
      auto first = next - std::min<std::ptrdiff_t>(job.missed_starts, next - fires.begin());
      graced.assign(first, next == fires.end() ? next : next + 1);
    }
    for (std::int64_t fire : graced) {
      out += fmt::format(
          "<rect class=\"grace\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
          "fill=\"#f4e3a1\"><title>start grace {} after {}</title></rect>",
          x(fire), style.tick_top, std::max(1.0, x(fire + job.start_grace) - x(fire)),
          style.tick_bottom - style.tick_top, FormatDuration(job.start_grace),
          FormatRfc3339(fire, job.schedule.zone()));
    }
    if (!graced.empty()) out += "\n";
  }
  for (std::int64_t fire : fires) {
    if (large) {
      out += fmt::format(
          "<line class=\"fire\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
          "stroke=\"#5b6472\"><title>fire time {3}</title></line>",
          x(fire), style.tick_top, style.tick_bottom, FormatRfc3339(fire, job.schedule.zone()));
    } else {
      out += fmt::format(
          "<line class=\"fire\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" "
          "stroke=\"#9aa3b2\"/>",
          x(fire), style.tick_top, style.tick_bottom);
    }
  }
  if (large && !fires.empty()) out += "\n";
  if (large && dense) {
    out += fmt::format(
        "<text class=\"dense\" x=\"{}\" y=\"40\" fill=\"#5b6472\">fires more than {} times in "
        "this window (every {} or less): only the latest ticks are drawn</text>\n",
        style.left + 4, style.max_ticks, job.period ? FormatDuration(*job.period) : "?");
  }

  double last_mark = -100;
  if (runs != nullptr) {
    for (const auto& run : *runs) {
      std::int64_t end = run.finished().value_or(now);
      if (end < window.start || run.started > window.end) continue;
      const char* outcome = RunOutcomeName(run, job, now);
      double x1 = x(run.started), x2 = std::max(x(end), x1 + 2);
      if (!large) {
        // Small and many to a page: the picture's title counts the outcomes instead.
        out += fmt::format(
            "<rect class=\"run {}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
            "fill=\"{}\"/>",
            outcome, x1, style.run_top, x2 - x1, style.run_height, Colour(outcome));
        continue;
      }
      std::string title = fmt::format(
          "{}: started {}, {}", outcome, FormatRfc3339(run.started, job.schedule.zone()),
          run.finished()
              ? fmt::format("ended {} ({})", FormatRfc3339(*run.finished(), job.schedule.zone()),
                            FormatDuration(run.duration))
              : fmt::format("running for {}", FormatDuration(now - run.started)));
      out += fmt::format("<g class=\"run {}\"><title>{}</title>", outcome, EscapeHtml(title));
      {
        // Where the run would count as hung.
        out += fmt::format(
            "<rect class=\"max-runtime\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" "
            "fill=\"none\" stroke=\"#9aa3b2\" stroke-dasharray=\"3 2\"/>",
            x1, style.run_top - 4, std::max(1.0, x(run.started + job.max_runtime) - x1),
            style.run_height + 8);
      }
      out += fmt::format(
          "<rect class=\"bar\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>",
          x1, style.run_top, x2 - x1, style.run_height, Colour(outcome));
      if (x1 - last_mark >= 12) {
        out += fmt::format(
            "<text class=\"mark\" x=\"{:.1f}\" y=\"104\" text-anchor=\"middle\" "
            "fill=\"{}\">{}</text>",
            x1, Colour(outcome), Mark(outcome));
        last_mark = x1;
      }
      out += "</g>\n";
    }
  }

  if (large) {
    out += fmt::format(
        "<line class=\"now\" x1=\"{0:.1f}\" y1=\"14\" x2=\"{0:.1f}\" y2=\"112\" stroke=\"#1d2430\" "
        "stroke-width=\"2\"><title>now {1}</title></line><text x=\"{0:.1f}\" y=\"11\" "
        "text-anchor=\"middle\">now</text>\n",
        x(now), FormatRfc3339(now, job.schedule.zone()));
    for (int i = 0; i <= 5; ++i) {
      std::int64_t time = window.start + (window.end - window.start) * i / 5;
      out += fmt::format(
          "<text class=\"axis\" x=\"{:.1f}\" y=\"128\" text-anchor=\"{}\" "
          "fill=\"#5b6472\">{}</text>",
          x(time),
          i == 0   ? "start"
          : i == 5 ? "end"
                   : "middle",
          AxisLabel(time, job.schedule.zone()));
    }
    out += "\n</svg>";
  } else {
    out += fmt::format(
        "<line class=\"now\" x1=\"{0:.1f}\" y1=\"0\" x2=\"{0:.1f}\" y2=\"{1}\" stroke=\"#1d2430\"/>"
        "</svg>",
        x(now), style.height);
  }
  return out;
}

}  // namespace schedwatch
