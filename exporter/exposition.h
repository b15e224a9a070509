// The per-role metric families, declared in one table and rendered as
// Prometheus text exposition format 0.0.4. Rendered once per refresh, served as bytes.
#pragma once

#include <string>
#include <string_view>

#include "exporter/chunked_text.h"
#include "exporter/state.h"

namespace schedwatch {

// Appends every per-role family, sorted by name, series sorted by role. Unknown values
// produce no sample; families without samples are left out.
void RenderRoleMetrics(const RefreshResult& result, ChunkedTextWriter& out);

// Escapes a label value: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view value);
// The same, appended to `out`.
void AppendEscapedLabelValue(std::string& out, std::string_view value);

}  // namespace schedwatch
