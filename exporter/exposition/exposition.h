// The per-role metric families, declared in one table and rendered in both forms /metrics
// answers in: Prometheus text 0.0.4 and OpenMetrics 1.0.0. Rendered once per refresh, served as
// bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "exporter/exposition/chunked_text.h"
#include "exporter/state/state.h"
#include "schedwatch/metrics.h"

namespace schedwatch {

// Which form, and what OpenMetrics adds to the text: counters' and histograms' `_created`
// samples (every counter the exporter keeps counts from its start), `# UNIT`, exemplars and the
// closing `# EOF` (the scrape's tail writes it).
struct ExpositionForm {
  bool open_metrics = false;
  std::int64_t counting_since = 0;  // Unix seconds: the exporter's start
};

inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";
inline constexpr std::string_view kOpenMetrics001ContentType =
    "application/openmetrics-text; version=0.0.1; charset=utf-8";

// Appends a family's `# HELP` and `# TYPE` lines, and in OpenMetrics its `# UNIT` when the name
// ends in one (seconds, bytes); there a counter's family is its name without `_total`.
void AppendHeader(std::string& out, const metrics::Metric& metric, const ExpositionForm& form);
// The name of a counter's or histogram's `_created` sample (OpenMetrics only).
std::string CreatedName(const metrics::Metric& metric);

// Appends ` # {run_id="…",run_url="…"} value timestamp` (OpenMetrics) when the run's id is
// UTF-8 with nothing to escape (no quote, backslash or control character: Prometheus would keep
// the escapes) and fits the 128 characters exemplar labels may hold; the url only when it is such
// text too and fits beside the id. Nothing otherwise: a cut id or url would name another run.
void AppendExemplar(std::string& out, const RunExemplar& exemplar, double value);

// Appends every per-role family, sorted by name, series sorted by role. Unknown values
// produce no sample; families without samples are left out. `previous`, when set, is the refresh
// the writer's previous text (of the same form) was rendered from by this function: its chunks
// whose roles' series are unchanged are reused, not written again.
void RenderRoleMetrics(const RefreshResult& result, const ExpositionForm& form,
                       ChunkedTextWriter& out, const RefreshResult* previous = nullptr);

// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view value);
// The same, appended to `out`.
void AppendEscapedLabelValue(std::string& out, std::string_view value);

}  // namespace schedwatch
