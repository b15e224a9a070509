#include "exporter/commands/discover_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "exporter/commands/discover.h"
#include "exporter/commands/spec_merge.h"
#include "schedwatch/platform/file.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

constexpr int kExitBadInput = 2;

// A setting given on discover's command line, as YAML: true, false and numbers plain, one value
// as itself, several as a list.
std::string SettingYaml(const std::vector<std::string>& values) {
  auto one = [](const std::string& value) {
    bool plain = value == "true" || value == "false" ||
                 (!value.empty() && std::all_of(value.begin(), value.end(), ::isdigit));
    return plain ? value : QuotedScalar(value);
  };
  if (values.size() == 1) return one(values[0]);
  std::string list = "[";
  for (const auto& value : values) list += (list.size() > 1 ? ", " : "") + one(value);
  return list + "]";
}

// `discover`: the sources of the spec (adding to it), or one source from the flags (a draft).
}  // namespace

int RunDiscoverCommand(const std::string& config_file, const DiscoverFlags& flags) {
  std::string spec_text, draft_sources;
  std::string shown = config_file;
  if (!config_file.empty()) {
    if (!flags.type.empty()) {
      std::fprintf(stderr,
                   "discover: --type makes a draft; with --config.file the spec's "
                   "sources are read (choose with --source)\n");
      return kExitBadInput;
    }
    if (!flags.settings.empty()) {
      std::fprintf(stderr,
                   "discover: source settings go with --type; with --config.file the "
                   "spec's sources are read as they are\n");
      return kExitBadInput;
    }
    auto text = platform::ReadRegularFile(config_file, flags.max_spec_bytes);
    if (!text) {
      std::fprintf(stderr, "%s\n", text.error().c_str());
      return kExitBadInput;
    }
    spec_text = std::move(*text);
  } else {
    if (flags.type.empty()) {
      std::fprintf(stderr, "discover: --config.file or --type is required\n");
      return kExitBadInput;
    }
    if (flags.sources.size() > 1) {
      std::fprintf(stderr, "discover: --type reads one source; give --source once\n");
      return kExitBadInput;
    }
    const SourceDescriptor* descriptor = BuiltInCatalog().Find(flags.type);
    for (const auto& setting_given : flags.settings) {
      const std::string& key = setting_given.first;  // not a structured binding: lambdas take it
      const auto& keys =
          descriptor != nullptr ? descriptor->settings_keys() : std::vector<SettingKey>{};
      bool known = std::any_of(keys.begin(), keys.end(),
                               [&](const SettingKey& setting) { return setting.name == key; });
      if (descriptor != nullptr && !known) {
        std::fprintf(stderr, "discover: --%s is not a setting of type %s\n", key.c_str(),
                     flags.type.c_str());
        return kExitBadInput;
      }
    }
    std::string name = flags.sources.empty() ? flags.type : flags.sources[0];
    draft_sources = fmt::format("  {}:\n    type: {}\n", YamlScalar(name), YamlScalar(flags.type));
    for (const auto& [key, values] : flags.settings) {
      draft_sources += fmt::format("    {}: {}\n", key, SettingYaml(values));
    }
    spec_text = "version: 1\nsources:\n" + draft_sources + "jobs: []\n";
    shown = "discover flags";
  }
  auto spec = ParseSpec(spec_text, shown, BuiltInCatalog());
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return kExitBadInput;
  }
  for (const auto& name : flags.sources) {
    if (!spec->sources.count(name)) {
      std::fprintf(stderr, "discover: --source \"%s\" is not a source of %s\n", name.c_str(),
                   shown.c_str());
      return kExitBadInput;
    }
  }
  DiscoverRequest request;
  request.spec = &*spec;
  request.sources = config_file.empty() ? std::vector<std::string>{} : flags.sources;
  if (!config_file.empty()) request.merge_into = spec_text;
  request.draft_sources = draft_sources;
  request.write_markers = flags.write_markers;
  request.now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  DiscoverOutcome outcome = Discover(request);
  std::fputs(outcome.report.c_str(), stderr);
  if (flags.output.empty()) {
    std::fputs(outcome.spec_text.c_str(), stdout);
  } else if (outcome.spec_text != spec_text || config_file.empty()) {
    auto written = platform::WriteFileAtomically(flags.output, outcome.spec_text, 0644);
    if (!written) {
      std::fprintf(stderr, "%s\n", written.error().c_str());
      return 1;
    }
  }
  return outcome.exit_code;
}

}  // namespace schedwatch
