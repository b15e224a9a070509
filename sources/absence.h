// The two-read rule for `missing`: a role the spec wants is missing only when a second read,
// a short while after the first, also lacks it. An absence seen once may be a race with the
// scheduler (a job being replaced), never a deletion to act or alert on.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"
#include "sources/source.h"

namespace schedwatch {

// The roles of `roles` that no object of `objects` holds.
std::set<std::string> RolesWithoutObject(const std::vector<std::string>& roles,
                                         const std::vector<LiveObject>& objects);

// What the reads of one source showed.
struct AbsenceReads {
  Result<SourceSnapshot> snapshot = Error{"not read"};  // the last read: classify from this one
  // Roles without an object in the first read and in the last: `missing` is claimed for these
  // only. Empty when a read failed.
  std::set<std::string> confirmed_absent;
  // Roles without an object in the first read (the second may have found them).
  std::set<std::string> absent_in_first_read;
  // Failures a retry got past in the first read, when a second read followed (which does not
  // see them again; its data problems it does).
  std::vector<SourceProblem> recovered_in_first_read;
  int reads = 0;
};

// Pure, in two steps. The first read: what it lacks. When some role is absent a second read
// follows: FirstOfTwo drops the first snapshot (so two complete lists are never held at once)
// and keeps what the first read showed; SecondRead completes the outcome.
AbsenceReads FirstRead(const std::vector<std::string>& roles, Result<SourceSnapshot> first);
void FirstOfTwo(AbsenceReads& reads);
void SecondRead(AbsenceReads& reads, Result<SourceSnapshot> second);

// Reads with `read`; when a role of `roles` has no object, calls `wait` (false: cancelled, the
// result is then the error `cancelled`) and reads again.
AbsenceReads ConfirmAbsence(const std::vector<std::string>& roles,
                            const std::function<Result<SourceSnapshot>()>& read,
                            const std::function<bool()>& wait);

}  // namespace schedwatch
