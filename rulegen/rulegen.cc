#include "rulegen/rulegen.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <system_error>

#include "rulegen/alerts.h"

namespace schedwatch::rulegen {
namespace {

// One output file: its name, where Generate() keeps it, and how it is rendered.
struct Piece {
  const char* name;
  std::string Output::*text;
  std::function<void(const Sink&)> render;
};

std::string SpecName(const Spec& spec) {
  std::string file = spec.file.substr(spec.file.rfind('/') + 1);
  file = file.substr(0, file.find('.'));
  std::string name = "schedwatch-";
  for (char c : file) {
    bool ok = std::isalnum(static_cast<unsigned char>(c));
    name += ok ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '-';
  }
  // Kubernetes object names: at most 253 characters, no trailing '-'.
  name = name.substr(0, 200);
  while (name.back() == '-') name.pop_back();
  return name;
}

std::vector<Piece> Pieces(const Spec& spec, const Options& options,
                          std::vector<std::string>& warnings) {
  std::vector<Piece> pieces = {
      {"schedwatch.rules.yml", &Output::rules,
       [&](const Sink& sink) { RenderRules(BuildRules(spec, options), &spec, options, sink); }},
      {"schedwatch-global.rules.yml", &Output::global_rules,
       [&](const Sink& sink) { RenderRules(BuildGlobalRules(options), nullptr, options, sink); }},
      {"schedwatch.rules.test.yml", &Output::rule_tests,
       [&](const Sink& sink) { RenderRuleTests(spec, options, warnings, sink); }},
      {"alertmanager.yml", &Output::alertmanager,
       [&](const Sink& sink) { sink(RenderAlertmanager(spec, options)); }},
      {"dashboard.json", &Output::dashboard,
       [&](const Sink& sink) { sink(RenderDashboard(spec, options)); }},
  };
  if (options.prometheus_rule) {
    pieces.push_back(
        {"schedwatch.prometheusrule.yaml", &Output::prometheus_rule, [&](const Sink& sink) {
           sink(RenderPrometheusRule(BuildRules(spec, options), &spec, options,
                                     SpecName(spec) + "-" + std::string(ModeName(options.mode))));
         }});
    pieces.push_back({"schedwatch-global.prometheusrule.yaml", &Output::global_prometheus_rule,
                      [&](const Sink& sink) {
                        sink(RenderPrometheusRule(BuildGlobalRules(options), nullptr, options,
                                                  "schedwatch-global"));
                      }});
  }
  if (options.mixin) {
    pieces.push_back({"schedwatch-global.libsonnet", &Output::global_mixin,
                      [&](const Sink& sink) { RenderGlobalMixin(options, sink); }});
    pieces.push_back({"mixin.libsonnet", &Output::mixin,
                      [&](const Sink& sink) { RenderMixin(spec, options, sink); }});
  }
  return pieces;
}

}  // namespace

Output Generate(const Spec& spec, const Options& options) {
  Output output;
  for (const auto& piece : Pieces(spec, options, output.warnings)) {
    std::string* text = &(output.*piece.text);
    piece.render([text](std::string_view chunk) { *text += chunk; });
  }
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
  auto pieces = Pieces(spec, options, warnings);
  std::vector<File> files(pieces.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    files[i].path = (std::filesystem::path(directory) / pieces[i].name).string();
    files[i].handle.reset(std::fopen(files[i].path.c_str(), "wb"));
    if (!files[i].handle) return Error{files[i].path + ": " + std::strerror(errno)};
  }
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    File& file = files[i];
    pieces[i].render([&file](std::string_view chunk) {
      if (!file.error &&
          std::fwrite(chunk.data(), 1, chunk.size(), file.handle.get()) != chunk.size()) {
        file.error = errno;
      }
    });
  }
  for (auto& file : files) {
    if (std::fclose(file.handle.release()) != 0 && !file.error) file.error = errno;
    if (file.error) return Error{file.path + ": " + std::strerror(file.error)};
  }
  return true;
}

}  // namespace schedwatch::rulegen
