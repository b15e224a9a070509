#include "sources/kubernetes/kubernetes_repairer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "schedwatch/classify.h"
#include "schedwatch/platform/api_client.h"
#include "schedwatch/yaml_tree.h"
#include "sources/kubernetes/kube_api.h"
#include "sources/kubernetes/kube_objects.h"
#include "sources/kubernetes/kubernetes_source.h"
#include "sources/repairer.h"

namespace schedwatch::kubernetes {
namespace {

using Json = nlohmann::json;

// Job names are the CronJob's name plus 11 characters, and must stay within 63.
constexpr std::size_t kMaxCronJobName = 52;
constexpr std::chrono::seconds kDefaultCreateTimeout{30};
constexpr std::chrono::seconds kRequestTimeout{10};
constexpr std::chrono::milliseconds kFirstBackoff{500};

std::string At(YamlNode node) { return fmt::format("{}:{}", node.line(), node.column()); }

bool Matches(std::string_view text, std::string_view allowed, std::size_t from = 0) {
  return from < text.size() && text.find_first_not_of(allowed, from) == std::string_view::npos;
}

// A plain scalar's JSON value under YAML 1.2's core schema.
Result<Json> PlainScalar(YamlNode node) {
  std::string_view text = node.scalar();
  if (text == "true" || text == "True" || text == "TRUE") return Json(true);
  if (text == "false" || text == "False" || text == "FALSE") return Json(false);
  std::size_t digits = text.size() > 1 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  int base = 0;
  if (Matches(text, "0123456789", digits)) base = 10;
  if (text.size() > 2 && text.substr(0, 2) == "0o" && Matches(text, "01234567", 2)) base = 8;
  if (text.size() > 2 && text.substr(0, 2) == "0x" && Matches(text, "0123456789abcdefABCDEF", 2))
    base = 16;
  if (base != 0) {
    std::size_t first = base == 10 ? (text[0] == '+' ? 1 : 0) : 2;
    std::int64_t value = 0;
    auto [end, error] =
        std::from_chars(text.data() + first, text.data() + text.size(), value, base);
    if (error != std::errc() || end != text.data() + text.size()) {
      return Error{fmt::format("{}: {} does not fit in 64 bits", At(node), text)};
    }
    return Json(value);
  }
  // [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
  std::size_t i = digits;
  auto run = [&](std::size_t& at) {
    std::size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
    return at - start;
  };
  std::size_t whole = run(i), fraction = 0;
  if (i < text.size() && text[i] == '.') fraction = run(++i);
  bool number = whole + fraction > 0;
  if (number && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    number = run(i) > 0;
  }
  if (number && i == text.size()) return Json(std::strtod(std::string(text).c_str(), nullptr));
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == ".inf" || lower == "+.inf" || lower == "-.inf" || lower == ".nan") {
    return Error{fmt::format("{}: {} has no JSON form", At(node), text)};
  }
  return Json(std::string(text));
}

// A CronJob manifest is about a dozen levels deep and a few hundred values; aliases share YAML
// nodes, so a few lines can expand to billions of JSON values (an alias bomb).
constexpr int kMaxTemplateDepth = 64;
constexpr std::size_t kMaxTemplateValues = 100000;

// Bounded in depth and in expanded values, whatever the YAML holds.
Result<Json> ToJson(YamlNode node, int depth, std::size_t& values) {
  if (depth > kMaxTemplateDepth) {
    return Error{fmt::format("{}: nested deeper than {} levels", At(node), kMaxTemplateDepth)};
  }
  if (++values > kMaxTemplateValues) {
    return Error{fmt::format("{}: expands to more than {} values (aliases of aliases?)", At(node),
                             kMaxTemplateValues)};
  }
  switch (node.kind()) {
    case YamlNode::Kind::kNull:
      return Json(nullptr);
    case YamlNode::Kind::kScalar:
      return node.plain() ? PlainScalar(node) : Json(std::string(node.scalar()));
    case YamlNode::Kind::kSequence: {
      Json items = Json::array();
      for (std::size_t i = 0; i < node.size(); ++i) {
        auto item = ToJson(node.item(i), depth + 1, values);
        if (!item) return item;
        items.push_back(std::move(*item));
      }
      return items;
    }
    case YamlNode::Kind::kMapping: {
      Json object = Json::object();
      for (std::size_t i = 0; i < node.size(); ++i) {
        YamlNode key = node.key(i);
        if (!key.IsScalar()) return Error{fmt::format("{}: a key must be a string", At(key))};
        std::string name(key.scalar());
        if (object.contains(name)) {
          return Error{fmt::format("{}: \"{}\" appears twice", At(key), name)};
        }
        auto value = ToJson(node.value(i), depth + 1, values);
        if (!value) return value;
        object[name] = std::move(*value);
      }
      return object;
    }
  }
  return Json(nullptr);
}

std::string Text(const Json& object, const char* key) {
  auto it = object.is_object() ? object.find(key) : object.end();
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

bool IsDnsSubdomain(const std::string& name) {
  auto alphanumeric = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return !name.empty() && alphanumeric(name.front()) && alphanumeric(name.back()) &&
         std::all_of(name.begin(), name.end(),
                     [&](char c) { return alphanumeric(c) || c == '-' || c == '.'; });
}

// Checks what the API server would refuse or what would defeat the fixed name, and settles the
// namespace. Returns the namespace.
Result<std::string> CheckMetadata(const Json& object, const std::vector<std::string>& namespaces) {
  if (!object.is_object()) return Error{"the template is not a mapping"};
  if (Text(object, "apiVersion") != "batch/v1" || Text(object, "kind") != "CronJob") {
    return Error{fmt::format("apiVersion and kind must be batch/v1 and CronJob, not \"{}\" \"{}\"",
                             Text(object, "apiVersion"), Text(object, "kind"))};
  }
  const Json& metadata = object.contains("metadata") ? object["metadata"] : Json();
  if (!metadata.is_object()) return Error{"metadata: must be a mapping"};
  for (const char* key : {"generateName", "uid", "resourceVersion"}) {
    if (metadata.contains(key)) {
      return Error{fmt::format(
          "metadata.{}: must not be set (a fixed name is what stops a second creation; uid and "
          "resourceVersion are the server's)",
          key)};
    }
  }
  std::string name = Text(metadata, "name");
  if (name.size() > kMaxCronJobName || !IsDnsSubdomain(name)) {
    return Error{fmt::format(
        "metadata.name: \"{}\" is not a CronJob name (lower-case letters, digits, '-' and '.', "
        "at most {} characters)",
        name, kMaxCronJobName)};
  }
  std::string namespace_name = Text(metadata, "namespace");
  if (namespace_name.empty()) {
    if (namespaces.size() != 1) {
      return Error{
          "metadata.namespace: must be set, as the source does not watch exactly one namespace"};
    }
    return namespaces.front();
  }
  if (!namespaces.empty() &&
      std::find(namespaces.begin(), namespaces.end(), namespace_name) == namespaces.end()) {
    return Error{fmt::format(
        "metadata.namespace: \"{}\" is not one of the source's namespaces, so the CronJob "
        "would never be seen",
        namespace_name)};
  }
  return namespace_name;
}

}  // namespace

Result<CronJobTemplate> ReadCronJobTemplate(std::string_view text, const JobSpec& job,
                                            const std::vector<std::string>& namespaces) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{document.error()};
  std::size_t values = 0;
  auto object = ToJson(document->root(), 0, values);
  if (!object) return Error{object.error()};
  auto namespace_name = CheckMetadata(*object, namespaces);
  if (!namespace_name) return Error{namespace_name.error()};
  (*object)["metadata"]["namespace"] = *namespace_name;

  // Read as the source reads live CronJobs, so that what validates is what will be seen.
  Json as_listed = *object;
  as_listed["metadata"]["uid"] = "template";
  auto page =
      ParseCronJobList(Json({{"kind", "CronJobList"}, {"items", Json::array({as_listed})}}).dump());
  if (!page) return Error{page.error()};
  if (!page->problems.empty()) return Error{page->problems.front().message};
  if (page->items.empty()) {
    return Error{fmt::format("metadata.labels: must carry {}: {}", kRoleLabel, job.role)};
  }
  const LiveObject& seen = page->items.front().object;
  if (seen.role() != job.role) {
    return Error{fmt::format("metadata.labels: {} is \"{}\", not \"{}\"", kRoleLabel, seen.role(),
                             job.role)};
  }
  if (!seen.enabled) return Error{"spec.suspend: is true; a repair must create a running job"};
  if (Drifted(job, seen)) {
    return Error{fmt::format(
        "schedule \"{}\", time zone {} and spec version \"{}\" differ from the spec's \"{}\", {} "
        "and \"{}\" (spec.schedule, spec.timeZone, the {} annotation)",
        seen.schedule(), seen.timezone(), seen.spec_version(), job.schedule.expression().text(),
        job.timezone, job.spec_version, kSpecVersionAnnotation)};
  }
  return CronJobTemplate{*namespace_name, Text((*object)["metadata"], "name"), object->dump()};
}

namespace {

class KubernetesRepairer : public Repairer {
 public:
  explicit KubernetesRepairer(Settings settings) : settings_(std::move(settings)) {}

  Result<bool> Validate(const JobSpec& job, const std::string& text) override {
    auto manifest = ReadCronJobTemplate(text, job, settings_.namespaces);
    if (!manifest) return Error{manifest.error()};
    return true;
  }

  Result<Creation> Create(const JobSpec& job, const std::string& text) override {
    auto manifest = ReadCronJobTemplate(text, job, settings_.namespaces);
    if (!manifest) return Error{manifest.error()};
    if (!access_) {
      auto access = LoadAccess(settings_);
      if (!access) return Error{access.error()};
      client_ = std::make_unique<platform::ApiClient>(RealTransport(access->tls), RetryPolicy());
      access_ = std::move(*access);
    }
    auto token = BearerToken(*access_);
    if (!token) return Error{token.error()};
    client_->SetToken(*token);
    return Post(*manifest);
  }

 private:
  static platform::RetryPolicy RetryPolicy() {
    platform::RetryPolicy policy = DefaultRetryPolicy();
    policy.first_backoff = kFirstBackoff;
    policy.request_timeout = kRequestTimeout;
    policy.connect_timeout = kRequestTimeout;
    return policy;
  }

  // POSTs the CronJob; the API client retries what may pass (transport failures, 429, 5xx)
  // within the timeout.
  Result<Creation> Post(const CronJobTemplate& manifest) {
    const std::string path =
        fmt::format("/apis/batch/v1/namespaces/{}/cronjobs", UrlEncode(manifest.namespace_name));
    const std::string what = fmt::format("cronjob {}/{}", manifest.namespace_name, manifest.name);
    platform::ApiCall call;
    call.method = "POST";
    call.url = access_->server + path + "?fieldManager=schedwatch";
    call.headers = {{"Content-Type", "application/json"}};
    call.body = manifest.json;
    call.describe = [](const HttpResponse& response) {
      return DescribeApiError(response.status, response.body);
    };
    auto& clock = client_->clock();
    auto response = client_->Send(
        call, clock.Now() + settings_.timeout.value_or(kDefaultCreateTimeout), nullptr);
    if (!response) return Error{response.error()};
    if (response->status >= 200 && response->status < 300) return Creation{what};
    if (response->status == 409 && StatusReason(response->body) == "AlreadyExists") {
      // Someone else's, or ours when an earlier attempt's answer was lost: reconcile re-lists.
      return Creation{what, /*already_exists=*/true};
    }
    return Error{fmt::format(
        "POST {}: {}", path,
        DescribeApiError(response->status, client_->Redact(response->body), "create on cronjobs"))};
  }

  Settings settings_;
  std::optional<ClusterAccess> access_;
  std::unique_ptr<platform::ApiClient> client_;
};

}  // namespace
}  // namespace schedwatch::kubernetes

namespace schedwatch {

Result<std::unique_ptr<Repairer>> MakeKubernetesRepairer(const SourceSpec& source) {
  auto settings = kubernetes::ReadSettings(source, std::getenv("KUBECONFIG"), std::getenv("HOME"));
  if (!settings) return Error{settings.error()};
  return std::unique_ptr<Repairer>(
      std::make_unique<kubernetes::KubernetesRepairer>(std::move(*settings)));
}

}  // namespace schedwatch
