// What the status page, the role page and their JSON share: times, condition chips, the page
// head and links, finding a role or source of a refresh. Private to exporter/pages/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "exporter/state/state.h"

namespace schedwatch {

std::string Time(const std::optional<std::int64_t>& time, std::int64_t now);
const char* ChipStyle(Condition condition);
std::string Chips(const RoleStatus& status);
const SourceStatus* FindSource(const RefreshResult& result, const std::string& name);
const RoleResult* FindRole(const RefreshResult& result, std::string_view name);
const SourceSpec* FindSourceSpec(const RefreshResult& result, const std::string& name);
std::string Head(const std::string& title, const std::string& base);
// Relative, like the JSON link, so the page also works behind a path prefix; "./" keeps a path
// such as "/x:y" from reading as a scheme.
std::string MetricsLink(const std::string& telemetry_path, const std::string& base);
// "team=db, tier=1", escaped; empty without labels.
std::string LabelsHtml(const JobSpec& job);

}  // namespace schedwatch
