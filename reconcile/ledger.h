// The ledger: for each role, the live object ID schedwatch last verified. A pointer, never
// proof that the object still exists: the exporter compares it with the live list.
//
//   {"version": 1, "roles": {"retry": {"source": "host-cron", "id":
//   "/etc/cron.d/schedwatch-retry:2",
//                                      "verified": "2026-11-30T12:00:00Z"}}}
#pragma once

#include <map>
#include <string>

#include "schedwatch/result.h"

namespace schedwatch {

struct LedgerEntry {
  std::string source;
  std::string id;
  std::string verified;  // RFC 3339
};

struct Ledger {
  std::map<std::string, LedgerEntry> entries;  // by role
};

// A missing file is an empty ledger.
Result<Ledger> ReadLedger(const std::string& path);
// Writes atomically (platform::WriteFileAtomically): readers and crashes never see half a file.
Result<bool> WriteLedger(const std::string& path, const Ledger& ledger);

}  // namespace schedwatch
