// The human side of a refresh: the status page (an overview with problems first, a page per role
// that explains its conditions with evidence and a timeline) and the same facts as JSON.
// Everything that came from a live object or the spec is escaped. The pages carry no inline
// script: their one script and style sheet are served by the exporter (StatusScript,
// StatusStyle) under fixed paths, so a Content-Security-Policy of `script-src 'self'` holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exporter/pages/explain.h"
#include "exporter/state/state.h"

namespace schedwatch {

struct PageOptions {
  std::string telemetry_path = "/metrics";  // --web.telemetry-path: the "metrics" link
  std::string runbook_url = kDefaultRunbookUrl;
};

// What the overview shows: every role unless filtered, problems first.
struct OverviewFilter {
  std::string condition;     // a condition name; empty: every role
  std::string source;        // a source name; empty: every source
  std::string query;         // part of a role name, any case
  std::string label;         // "name=value" of the spec's labels, or "name": roles that have it
  std::size_t limit = 1000;  // rows drawn (counts always cover every role); 0: all
};

inline constexpr const char* kStatusScriptPath = "/static/status.js";
inline constexpr const char* kStatusStylePath = "/static/status.css";
// For the HTML pages: no inline script, nothing from elsewhere.
inline constexpr const char* kStatusPagePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

std::string RenderStatusHtml(const RefreshResult& result, const PageOptions& options = {},
                             const OverviewFilter& filter = {});

// Where the bulk of a big page goes as it is made, a row at a time; false stops the rendering
// (the server has no room left for it).
using PageSink = std::function<bool(std::string_view)>;

// The roles an overview draws, in their order. Beside the refresh they are all its bulk (rows
// and the sources table) depends on, so filters that select the same roles share one rendering.
struct OverviewSelection {
  std::vector<std::uint32_t> drawn;  // places in the refresh's roles
  std::size_t matched = 0;           // before the limit
};
OverviewSelection SelectOverview(const RefreshResult& result, const OverviewFilter& filter);
// RenderStatusHtml in two parts: the head (filter form, counts, links: small, per filter) and
// the rows and sources table, written to `sink`; false when the sink refused.
std::string RenderOverviewHead(const RefreshResult& result, const PageOptions& options,
                               const OverviewFilter& filter, const OverviewSelection& selection);
bool RenderOverviewRows(const RefreshResult& result, const OverviewSelection& selection,
                        const PageSink& sink);
// nullopt when the role is not in the spec.
std::optional<std::string> RenderRoleHtml(const RefreshResult& result, std::string_view role,
                                          const PageOptions& options = {});

// `label` as OverviewFilter::label; empty: every role.
std::string RenderStatusJson(const RefreshResult& result, const PageOptions& options = {},
                             std::string_view label = "");
// The roles /api/v1/status lists for `label`, in order; the same roles make the same bytes.
std::vector<std::uint32_t> SelectStatusRoles(const RefreshResult& result, std::string_view label);
// RenderStatusJson of `roles`, written to `sink`; false when the sink refused.
bool RenderStatusJson(const RefreshResult& result, const PageOptions& options,
                      const std::vector<std::uint32_t>& roles, const PageSink& sink);
// Whether `job` has the label `filter` ("name=value", or "name" for any value).
bool MatchesLabel(const JobSpec& job, std::string_view filter);
std::optional<std::string> RenderRoleJson(const RefreshResult& result, std::string_view role,
                                          const PageOptions& options = {});
// One role as text for a terminal, from the JSON of RenderRoleJson (local or fetched).
std::string RenderExplainText(const nlohmann::json& role);

const std::string& StatusScript();
const std::string& StatusStyle();

std::string EscapeHtml(std::string_view text);

}  // namespace schedwatch
