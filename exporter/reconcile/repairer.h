// How reconcile re-creates one missing job on one kind of scheduler, from the job's literal,
// versioned template. A repairer only ever creates: it never modifies or deletes an object.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"

namespace schedwatch {

class Repairer {
 public:
  virtual ~Repairer() = default;
  // Checks that the template creates exactly this job: the role's marker, its spec version and
  // its schedule. An Error says what is wrong with it; nothing is written before this passes.
  virtual Result<bool> Validate(const JobSpec& job, const std::string& template_text) = 0;
  // Creates the object. Must fail, not overwrite, when an object of that name already exists
  // (someone else created it since the last read). Returns a description of what was created.
  virtual Result<std::string> Create(const JobSpec& job, const std::string& template_text) = 0;
};

// nullptr with an explanation when the source type cannot be repaired (github_actions: a
// workflow is a commit).
Result<std::unique_ptr<Repairer>> MakeRepairer(const SourceSpec& source);

}  // namespace schedwatch
