// `schedwatch_exporter discover`: reads what each source's scheduler holds now, marked or not,
// and writes a draft spec for a person to review (or adds to an existing spec only what it does
// not have yet), with the markers that tie each object to its role. It never creates, changes
// or deletes a scheduler object; with write_markers it adds marker comments where the source
// type can (crontab files), and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"
#include "sources/discoverer.h"

namespace schedwatch {

struct DiscoverRequest {
  const Spec* spec = nullptr;        // the sources to read; when merging, the jobs it has
  std::vector<std::string> sources;  // names to read; empty: every source of the spec
  std::string merge_into;            // the spec file's text to add to; empty: write a draft
  std::string draft_sources;         // draft: the `sources:` block's text (indented lines)
  bool write_markers = false;
  std::int64_t now = 0;
  // Makes each source's discoverer; by default its type's module's.
  std::function<Result<std::unique_ptr<Discoverer>>(const SourceOptions&)> make_discoverer;
};

struct DiscoverOutcome {
  std::string spec_text;  // the draft, or the merged file
  std::string report;     // for people: what was read, added, which markers to add or written
  int exit_code = 0;      // 0 fine, 1 a source could not be read (the rest is still there)
};

DiscoverOutcome Discover(const DiscoverRequest& request);

// A valid role name from words: lower case, runs of other characters as one '-', starting with
// a letter or digit, at most 59 characters (room for a "-NN" that makes it unique).
std::string RoleNameFrom(std::string_view words);

// The `max_runtime` discover suggests for a longest run: twice it, rounded up to whole minutes,
// at least a minute.
std::int64_t SuggestedMaxRuntime(std::int64_t longest_run_seconds);

}  // namespace schedwatch
