#include "reconcile/ledger.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
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
  std::string temporary = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << json.dump(2) << "\n";
    if (!out.flush()) {
      std::remove(temporary.c_str());
      return Error{fmt::format("cannot write {}: {}", temporary, std::strerror(errno))};
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string error = std::strerror(errno);
    std::remove(temporary.c_str());
    return Error{fmt::format("cannot replace {}: {}", path, error)};
  }
  return true;
}

}  // namespace schedwatch
