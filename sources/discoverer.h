// What `schedwatch_exporter discover` asks of a source type: every object its scheduler holds,
// with or without a marker, and how a person (or discover itself) ties one to a role. A source's
// List() returns marker-bearing objects only; a Discoverer sees the rest too, and never writes
// anything but markers. Each type provides one through its module (sources/module.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schedwatch/result.h"
#include "sources/source.h"

namespace schedwatch {

// One object of a scheduler as discover found it.
struct FoundObject {
  std::string id;  // where it lives: "/etc/cron.d/sysstat:6", "batch/nightly"
  // The role it is tied to already (by its marker, or by the spec: a job's workflow path);
  // empty when none.
  std::string role;
  std::string spec_version;  // from its marker
  bool marked = false;       // it carries its marker in full: nothing to add
  // Words for a role when it has none (the file and the command, the object's name): readable
  // and the same on every machine holding the same object. Discover makes it valid and unique.
  std::string suggested_role;
  // As the scheduler holds it; systemd: OnCalendar lines joined with "\n", or "monotonic".
  std::string schedule;
  std::string timezone;  // empty: the spec's default
  // A schedule without fire times (a monotonic timer): how often the scheduler starts it again,
  // from which discover derives stale_after as the spec does from a period (none: it never
  // repeats), and its triggers as written ("OnBootSec=15m, OnUnitActiveSec=1d"), a comment.
  std::optional<std::int64_t> repeat_seconds;
  std::string repeat_from;
  // Not a job: why the scheduler would not run it (cron refuses the file, suspended, disabled).
  // Listed as a comment in the draft, never as a job.
  std::string not_run_because;
  // Keys a job of this type needs besides role, source, schedule and spec_version
  // ({"workflow", ".github/workflows/nightly.yml"}), in the order they are written.
  std::vector<std::pair<std::string, std::string>> job_keys;
  // From the run history, when the source has one: finished runs seen and the longest.
  int finished_runs = 0;
  std::optional<std::int64_t> longest_run_seconds;
};

// A setting discover chose by looking at the host, for a source block that does not say
// (crontab: `history: journal` where cron logs only to the journal), and why. No key: only the
// why, a finding for a person (nothing to read the history from, and what that means).
struct ChosenSetting {
  std::string key;
  std::string value;  // as YAML
  std::string why;    // lines of text, no '#'
};

struct Discovery {
  std::vector<FoundObject> objects;  // in a stable order (path and line, namespace and name)
  // What limited the reading and still left it useful ("no run history: ... does not exist").
  std::vector<std::string> notes;
  // A draft writes them into its source block, each below its why as comments; adding to a
  // spec, the report names them.
  std::vector<ChosenSetting> settings;
};

// A marker discover writes itself (--write-markers), for types that can.
struct MarkerToWrite {
  FoundObject object;
  std::string role;
  std::string spec_version;
};

class Discoverer {
 public:
  virtual ~Discoverer() = default;
  // Reads everything the scheduler holds. An Error: nothing could be read.
  virtual Result<Discovery> Discover(const ListContext& context) = 0;
  // What to add to tie `object` to `role`, for a person: lines of text (a comment line and
  // where it goes, kubectl commands), each ending in a newline.
  virtual std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                         const std::string& spec_version) const = 0;
  // Whether WriteMarkers can write this type's markers.
  virtual bool CanWriteMarkers() const { return false; }
  // Adds the markers, and nothing else; one line per file written or refused, for people.
  // Refusing one file does not stop the others; an Error only when nothing could be tried.
  virtual Result<std::vector<std::string>> WriteMarkers(const std::vector<MarkerToWrite>& markers) {
    (void)markers;
    return Error{"this source type's markers cannot be written by discover"};
  }
};

using DiscovererFactory = std::function<Result<std::unique_ptr<Discoverer>>(const SourceOptions&)>;

// Helpers for discoverers built on a source's List.
// The object as a live one shows it (marked when it has a role), and the objects by id.
FoundObject FoundFromLive(const LiveObject& live);
std::vector<LiveObject> SortedById(std::vector<LiveObject> objects);
// Counts the finished runs of `history` (with `successes_only`, the successful ones) into
// `object` and keeps the longest.
void AddLongestRun(const RunHistory& history, bool successes_only, FoundObject& object);
// `text` as one word for sh in printed commands: single-quoted unless it needs nothing.
std::string ShellWord(const std::string& text);

}  // namespace schedwatch
