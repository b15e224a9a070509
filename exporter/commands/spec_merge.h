// Adding jobs to a spec file as text: the new items go at the end of its `jobs:` list, written
// in the list's own style (block items at its indentation, or flow items), so that everything
// else in the file (order, comments, quoting, indentation) stays byte for byte as it was.
// Pure: text in, text out; positions come from the YAML parse, not from guessing.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

struct JobText {
  std::vector<std::string> comments;                        // lines above it, without "# "
  std::vector<std::pair<std::string, std::string>> fields;  // key, value already in YAML
  std::vector<std::string> field_comments;                  // per field, "" for none
};

// A YAML scalar for `text`: plain when it is a simple word that reads back as the same string,
// else double-quoted with JSON escapes (valid YAML).
std::string YamlScalar(std::string_view text);
// Always double-quoted (schedules, spec versions); bytes that are not UTF-8 become U+FFFD.
std::string QuotedScalar(std::string_view text);

// One block item, "- key: value" lines at `indent` columns (`gap` blanks after the dash).
std::string RenderJobBlock(const JobText& job, int indent, int gap = 1);

// `spec_text` with `jobs` appended to its top-level `jobs:` list, and `header` as a comment
// line above them (block lists only). An Error when the text does not parse or has no list.
Result<std::string> AppendJobs(std::string_view spec_text, const std::vector<JobText>& jobs,
                               const std::string& header);

}  // namespace schedwatch
