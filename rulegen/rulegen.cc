#include "rulegen/rulegen.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "rulegen/alerts.h"

namespace schedwatch::rulegen {
namespace {

// Renders the four files in order, each through its sink.
void Render(const Spec& spec, const Options& options, const Sink (&sinks)[4],
            std::vector<std::string>& warnings) {
  RenderRules(BuildRules(spec, options), spec, options, sinks[0]);
  RenderRuleTests(spec, options, warnings, sinks[1]);
  sinks[2](RenderAlertmanager(spec, options));
  sinks[3](RenderDashboard(spec, options));
}

constexpr const char* kFileNames[4] = {"schedwatch.rules.yml", "schedwatch.rules.test.yml",
                                       "alertmanager.yml", "dashboard.json"};

}  // namespace

Output Generate(const Spec& spec, const Options& options) {
  Output output;
  std::string* texts[4] = {&output.rules, &output.rule_tests, &output.alertmanager,
                           &output.dashboard};
  auto into = [](std::string* text) { return [text](std::string_view chunk) { *text += chunk; }; };
  const Sink sinks[4] = {into(texts[0]), into(texts[1]), into(texts[2]), into(texts[3])};
  Render(spec, options, sinks, output.warnings);
  return output;
}

Result<bool> Write(const Spec& spec, const Options& options, const std::string& directory,
                   std::vector<std::string>& warnings) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error) return Error{directory + ": " + error.message()};
  struct File {
    std::string path;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> handle{nullptr, &std::fclose};
    int error = 0;
  };
  File files[4];
  for (int i = 0; i < 4; ++i) {
    files[i].path = (std::filesystem::path(directory) / kFileNames[i]).string();
    files[i].handle.reset(std::fopen(files[i].path.c_str(), "wb"));
    if (!files[i].handle) return Error{files[i].path + ": " + std::strerror(errno)};
  }
  auto into = [](File& file) {
    return [&file](std::string_view chunk) {
      if (!file.error &&
          std::fwrite(chunk.data(), 1, chunk.size(), file.handle.get()) != chunk.size()) {
        file.error = errno;
      }
    };
  };
  const Sink sinks[4] = {into(files[0]), into(files[1]), into(files[2]), into(files[3])};
  Render(spec, options, sinks, warnings);
  for (auto& file : files) {
    if (std::fclose(file.handle.release()) != 0 && !file.error) file.error = errno;
    if (file.error) return Error{file.path + ": " + std::strerror(file.error)};
  }
  return true;
}

}  // namespace schedwatch::rulegen
