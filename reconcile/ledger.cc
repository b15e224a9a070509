#include "reconcile/ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "schedwatch/platform/file.h"

namespace schedwatch {

// A ledger holds one short entry per role: 64 MiB is far more than 100,000 roles need.
constexpr std::size_t kMaxLedgerBytes = 64u << 20;

Result<Ledger> ReadLedger(const std::string& path) {
  platform::ReadFailure failure;
  auto text = platform::ReadRegularFile(path, kMaxLedgerBytes, nullptr, &failure);
  if (!text) {
    if (failure == platform::ReadFailure::kNotFound) return Ledger{};
    return Error{"the ledger: " + text.error()};
  }
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || !json.contains("roles") ||
      !json["roles"].is_object()) {
    return Error{
        fmt::format("{}: not a schedwatch ledger (expected {{\"version\": 1, \"roles\": "
                    "{{...}}}})",
                    path)};
  }
  Ledger ledger;
  for (const auto& [role, entry] : json["roles"].items()) {
    if (!entry.is_object()) continue;
    ledger.entries[role] = {entry.value("source", ""), entry.value("id", ""),
                            entry.value("verified", "")};
  }
  return ledger;
}

Result<bool> WriteLedger(const std::string& path, const Ledger& ledger) {
  nlohmann::json json{{"version", 1}, {"roles", nlohmann::json::object()}};
  for (const auto& [role, entry] : ledger.entries) {
    json["roles"][role] = {
        {"source", entry.source}, {"id", entry.id}, {"verified", entry.verified}};
  }
  // fsynced and renamed over: a crash leaves the old ledger or the new one, never half of one,
  // and perhaps a temporary, removed by the next write.
  auto slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  platform::RemoveStaleTemporaries(
      slash == std::string::npos ? "." : path.substr(0, std::max<std::size_t>(slash, 1)), name);
  auto written = platform::WriteFileAtomically(path, json.dump(2) + "\n", 0644);
  if (!written) return Error{written.error()};
  return true;
}

}  // namespace schedwatch
