// The human side of a refresh: an HTML status page and the same facts as JSON. Everything that
// came from a live object is escaped.
#pragma once

#include <string>

#include "exporter/state.h"

namespace schedwatch {

// `telemetry_path` is --web.telemetry-path: where the page's "metrics" link points.
std::string RenderStatusHtml(const RefreshResult& result,
                             const std::string& telemetry_path = "/metrics");
std::string RenderStatusJson(const RefreshResult& result);
std::string EscapeHtml(const std::string& text);

}  // namespace schedwatch
