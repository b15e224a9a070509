// How reconcile re-creates one missing job on one kind of scheduler, from the job's literal,
// versioned template. A repairer only ever creates: it never modifies or deletes an object.
#pragma once

#include <memory>
#include <string>

#include "schedwatch/result.h"
#include "schedwatch/spec.h"

namespace schedwatch {

struct Creation {
  std::string what;             // what was created ("/etc/cron.d/schedwatch-retry"), or what
                                // stood in the way
  bool already_exists = false;  // an object of that name was there; nothing was written
};

class Repairer {
 public:
  virtual ~Repairer() = default;
  // Checks that the template creates exactly this job: the role's marker, its spec version and
  // its schedule. An Error says what is wrong with it; nothing is written before this passes.
  virtual Result<bool> Validate(const JobSpec& job, const std::string& template_text) = 0;
  // Creates the object. When an object of that name already exists (someone else created it
  // since the last read) it must leave it alone and say so (already_exists), never overwrite.
  virtual Result<Creation> Create(const JobSpec& job, const std::string& template_text) = 0;
  // Whether an earlier Create of this job was killed after writing and before the object was
  // live (a systemd timer written, not yet started: it reads `inactive`, not `missing`).
  // reconcile then calls Create again, which finishes it.
  virtual bool Unfinished(const JobSpec& /*job*/) { return false; }
};

// An Error saying why when the source type cannot be repaired (github_actions: a workflow is a
// commit).
Result<std::unique_ptr<Repairer>> MakeRepairer(const SourceSpec& source);

Result<std::unique_ptr<Repairer>> MakeCrontabRepairer(const SourceSpec& source);
Result<std::unique_ptr<Repairer>> MakeKubernetesRepairer(const SourceSpec& source);

}  // namespace schedwatch
