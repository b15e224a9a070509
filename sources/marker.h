// The schedwatch marker that ties a scheduler's object to a role: `schedwatch: role=retry
// spec_version=7`, in a crontab comment above an entry or in a GitLab schedule's description.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "schedwatch/result.h"

namespace schedwatch {

struct Marker {
  std::string role, spec_version;
};

// `text` starts at "schedwatch:" (blanks before it allowed) and ends where the marker does.
// nullopt when it is no marker; an Error when it is one but unusable (an unknown key, a value
// that is empty or not printable UTF-8, no role).
std::optional<Result<Marker>> ParseMarker(std::string_view text);

// "schedwatch: role=retry spec_version=7" (without spec_version when empty).
std::string FormatMarker(const Marker& marker);

// The marker in a free-text description (a GitLab schedule's, a Celery periodic task's, a
// Sidekiq-cron job's): "Nightly export [schedwatch: role=export spec_version=3]", or a description
// that is the marker alone. nullopt when it holds none.
std::optional<Result<Marker>> DescriptionMarker(std::string_view description);
// "<text> [schedwatch: role=R spec_version=V]".
std::string DescriptionWithMarker(std::string_view text, const Marker& marker);
// The description without its marker: "Nightly export [schedwatch: role=x]" is "Nightly export";
// a description that is the marker alone is "".
std::string DescriptionWithoutMarker(const std::string& description);

}  // namespace schedwatch
