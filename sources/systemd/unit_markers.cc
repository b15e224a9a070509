#include "sources/systemd/unit_markers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "schedwatch/platform/file.h"

namespace schedwatch::systemd {
namespace {

std::string_view Trim(std::string_view text) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

bool Printable(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u != 0x7f;
  });
}

}  // namespace

bool IsRoleName(std::string_view role) {
  if (role.empty() || role.size() > 63) return false;
  if (!std::isalnum(static_cast<unsigned char>(role[0]))) return false;
  return std::all_of(role.begin(), role.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

void ApplyUnitFile(std::string_view text, std::string_view name, UnitMarkers& markers) {
  if (text.find('\0') != std::string_view::npos) {
    markers.error = fmt::format("{} is not a text file", name);
    return;
  }
  bool in_unit = false, in_timer = false;
  std::size_t line_number = 0;
  std::string logical;  // a line with its continuations
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    std::string_view trimmed = Trim(raw);
    // systemd: a comment line ends a continuation's comment too, and is never continued.
    if (logical.empty() && (trimmed.empty() || trimmed[0] == '#' || trimmed[0] == ';')) continue;
    if (!trimmed.empty() && trimmed.back() == '\\') {
      trimmed.remove_suffix(1);
      logical.append(trimmed.data(), trimmed.size());
      logical += ' ';
      if (pos <= text.size()) continue;
    } else {
      logical.append(trimmed.data(), trimmed.size());
    }
    std::string line = std::move(logical);
    logical.clear();
    std::string_view view = Trim(line);
    if (view.empty()) continue;
    if (view.front() == '[') {
      in_unit = view == "[Unit]";
      in_timer = view == "[Timer]";
      continue;
    }
    if (!in_unit && !in_timer) continue;
    std::size_t eq = view.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = Trim(view.substr(0, eq));
    std::string_view value = Trim(view.substr(eq + 1));
    if (in_timer) {
      if (key != "OnCalendar") continue;
      if (value.empty()) {
        markers.on_calendar.clear();  // systemd: an empty assignment resets the list
      } else if (Printable(value) && markers.on_calendar.size() < 64) {
        markers.on_calendar.emplace_back(value);
      }
      continue;
    }
    if (key != kRoleKey && key != kSpecVersionKey) continue;
    if (!value.empty() && (value.size() > 256 || !Printable(value))) {
      markers.error = fmt::format("{}:{}: {} is not a printable value of at most 256 bytes", name,
                                  line_number, key);
      continue;
    }
    if (key == kRoleKey) {
      if (!value.empty() && !IsRoleName(value)) {
        // The value is not echoed: the file may be one its reader must not show.
        markers.error =
            fmt::format("{}:{}: {} is not a role name (letters, digits, '-' and '_', at most 63)",
                        name, line_number, key);
        continue;
      }
      markers.role = std::string(value);
    } else {
      markers.spec_version = std::string(value);
    }
  }
}

UnitMarkers ReadUnitMarkers(const std::string& root, const std::vector<std::string>& paths,
                            const std::atomic<bool>* cancelled) {
  UnitMarkers markers;
  for (const auto& path : paths) {
    if (path.empty() || path == "/dev/null") continue;
    if (path[0] != '/') {
      markers.error = fmt::format("unit file path \"{}\" is not absolute", path);
      return markers;
    }
    platform::ReadFailure failure = platform::ReadFailure::kNone;
    auto text =
        root.empty()
            ? platform::ReadGuardedFile(path, kMaxUnitFileBytes, cancelled, &failure)
            : platform::ReadGuardedFileIn(root, path, kMaxUnitFileBytes, cancelled, &failure);
    if (!text) {
      // A masked unit's link to /dev/null: a character device, no markers of its own.
      if (failure == platform::ReadFailure::kNotRegular) {
        if (text.error().find("character device") != std::string::npos) continue;
      }
      markers.error = text.error();
      return markers;
    }
    ApplyUnitFile(*text, path, markers);
    if (!markers.error.empty()) return markers;
  }
  return markers;
}

}  // namespace schedwatch::systemd
