// PromQL instant-vector selectors, as a job's `success_metric` names its pushed series:
// `name{label="v",other=~"a|b"}`. Checked when the spec is read, so that a typo is a spec error
// with its line rather than a rule file Prometheus refuses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

struct LabelMatcher {
  std::string name;
  std::string op;  // = != =~ !~
  std::string value;
};

struct Selector {
  std::string metric;  // may be empty when a __name__ matcher or only labels are given
  std::vector<LabelMatcher> matchers;
};

// Errors say what was expected and at which character (1-based): "expected '=', '!=', '=~' or
// '!~' after label job at character 9". Regular expressions are not compiled.
Result<Selector> ParseSelector(std::string_view text);

}  // namespace schedwatch
