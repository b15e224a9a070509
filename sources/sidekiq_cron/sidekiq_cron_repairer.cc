#include "sources/sidekiq_cron/sidekiq_cron_repairer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "schedwatch/classify.h"
#include "schedwatch/yaml_tree.h"
#include "sources/sidekiq_cron/sidekiq_cron_mapping.h"
#include "sources/sidekiq_cron/sidekiq_cron_source.h"

namespace schedwatch::sidekiq_cron {
namespace {

using Json = nlohmann::ordered_json;  // Ruby's hashes keep their order, and so does the JSON

constexpr std::size_t kMaxArgNodes = 10'000;  // aliases share nodes: expanding them is bounded

Result<Json> ToJson(YamlNode node, std::size_t& budget) {
  if (budget-- == 0) return Error{fmt::format("more than {} values", kMaxArgNodes)};
  if (node.IsNull()) return Json(nullptr);
  if (node.IsScalar()) {
    std::string text(node.scalar());
    if (node.plain()) {  // typed as YAML 1.2's core schema, as Ruby's YAML mostly does
      if (text == "true" || text == "false") return Json(text == "true");
      if (text == "null" || text == "~") return Json(nullptr);
      auto number = Json::parse(text, nullptr, false);
      if (number.is_number()) return number;
    }
    return Json(text);
  }
  Json out = node.IsSequence() ? Json::array() : Json::object();
  for (std::size_t i = 0; i < node.size(); ++i) {
    if (node.IsSequence()) {
      auto item = ToJson(node.item(i), budget);
      if (!item) return item;
      out.push_back(std::move(*item));
    } else {
      if (!node.key(i).IsScalar()) return Error{"a key that is not a string"};
      auto value = ToJson(node.value(i), budget);
      if (!value) return value;
      out[std::string(node.key(i).scalar())] = std::move(*value);
    }
  }
  return out;
}

std::string Dump(const Json& json) {
  return json.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

class SidekiqCronRepairer : public Repairer {
 public:
  explicit SidekiqCronRepairer(std::unique_ptr<SidekiqCronSource> source)
      : source_(std::move(source)) {}

  Result<bool> Validate(const JobSpec& job, const std::string& text) override {
    auto parsed = ReadJobTemplate(text, job, source_->local_zone());
    if (!parsed) return Error{parsed.error()};
    return true;
  }

  Result<Creation> Create(const JobSpec& job, const std::string& text) override {
    auto parsed = ReadJobTemplate(text, job, source_->local_zone());
    if (!parsed) return Error{parsed.error()};
    auto redis = source_->Connect();
    if (!redis) return Error{redis.error()};
    const std::string key = source_->Key("cron_job:" + parsed->name);
    const std::string what = "cron job " + key;
    // WATCH first: a job written after the EXISTS drops the transaction below.
    auto seen = (*redis)->Pipeline({{"WATCH", key}, {"EXISTS", key}});
    if (!seen) return Error{seen.error()};
    for (const auto& reply : *seen) {
      if (reply.is_error()) return Error{fmt::format("{}: {}", key, reply.text.substr(0, 200))};
    }
    if ((*seen)[1].integer != 0) return Creation{what, true};
    std::vector<std::string> hmset{"HMSET", key};
    for (const auto& [field, value] : parsed->fields) {
      hmset.push_back(field);
      hmset.push_back(value);
    }
    // The member carries no namespace (redis-namespace prefixes keys, not values).
    auto written =
        (*redis)->Pipeline({{"MULTI"},
                            hmset,
                            {"SADD", source_->Key("cron_jobs"), "cron_job:" + parsed->name},
                            {"EXEC"}});
    if (!written) return Error{written.error()};
    for (const auto& reply : *written) {
      if (reply.is_error()) return Error{fmt::format("{}: {}", key, reply.text.substr(0, 200))};
    }
    const RedisValue& exec = written->back();
    if (exec.type == RedisValue::Type::kNil) return Creation{what, true};  // touched meanwhile
    if (!exec.is_array() || exec.elements.size() != 2) {
      return Error{fmt::format("{}: EXEC answered no list of two replies", key)};
    }
    return Creation{what};
  }

 private:
  std::unique_ptr<SidekiqCronSource> source_;
};

}  // namespace

Result<JobTemplate> ReadJobTemplate(std::string_view text, const JobSpec& job,
                                    const std::string& local_zone) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{"not YAML: " + document.error()};
  YamlNode root = document->root();
  if (!root.IsMapping()) return Error{"must be a mapping of one Sidekiq-cron job's keys"};
  static const std::set<std::string_view> kKeys = {"name",  "cron", "class",       "klass",
                                                   "queue", "args", "description", "status"};
  std::map<std::string, YamlNode> values;
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (!root.key(i).IsScalar() || !kKeys.count(root.key(i).scalar())) {
      return Error{fmt::format(
          "unknown key {} (name, cron, class or klass, queue, args, description, status)",
          root.key(i).Describe())};
    }
    values.emplace(root.key(i).scalar(), root.value(i));
  }
  auto scalar = [&](const char* key, bool required) -> Result<std::string> {
    auto it = values.find(key);
    if (it == values.end()) {
      if (required) return Error{fmt::format("{}: missing", key)};
      return std::string();
    }
    if (!it->second.IsScalar()) return Error{fmt::format("{}: must be a string", key)};
    std::string value(it->second.scalar());
    if (value.size() > kMaxTextBytes) {
      return Error{fmt::format("{}: longer than {} bytes", key, kMaxTextBytes)};
    }
    return value;
  };
  CronJob cron_job;
  for (auto [key, target, required] :
       {std::tuple{"name", &cron_job.name, true}, std::tuple{"cron", &cron_job.cron, true},
        std::tuple{"description", &cron_job.description, true},
        std::tuple{"queue", &cron_job.queue, false},
        std::tuple{"status", &cron_job.status, false}}) {
    auto value = scalar(key, required);
    if (!value) return Error{value.error()};
    *target = *value;
  }
  if (values.count("class") && values.count("klass")) return Error{"class and klass: give one"};
  auto klass = scalar(values.count("klass") ? "klass" : "class", true);
  if (!klass) return Error{klass.error()};
  cron_job.klass = *klass;
  if (cron_job.name.empty() || cron_job.klass.empty() || cron_job.cron.empty()) {
    return Error{"name, cron and class must not be empty"};
  }
  if (std::any_of(cron_job.name.begin(), cron_job.name.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return Error{"name: a control character"};
  }
  if (cron_job.status.empty()) cron_job.status = "enabled";
  if (!cron_job.enabled()) {
    return Error{fmt::format("status: {} would create a disabled job", cron_job.status)};
  }
  if (cron_job.queue.empty()) cron_job.queue = "default";
  auto marker = DescriptionMarker(cron_job.description);
  if (!marker) {
    return Error{fmt::format("description: must carry [schedwatch: role={} spec_version={}]",
                             job.role, job.spec_version)};
  }
  if (!*marker) return Error{"description: " + marker->error()};
  if ((*marker)->role != job.role) {
    return Error{
        fmt::format("description: the marker's role is {}, not {}", (*marker)->role, job.role)};
  }
  LiveObject object = MakeLiveObject(cron_job, job.role, (*marker)->spec_version, local_zone);
  if (Drifted(job, object)) {
    return Error{fmt::format(
        "cron \"{}\" in {}, spec_version {}: not the job's schedule \"{}\" in {}, spec_version {}",
        cron_job.cron, object.timezone().empty() ? "an unknown zone" : object.timezone(),
        object.spec_version(), job.schedule.expression().text(), job.timezone, job.spec_version)};
  }
  // Job#initialize: a mapping is one argument, a scalar a list of one.
  Json args = Json::array();
  if (auto it = values.find("args"); it != values.end() && !it->second.IsNull()) {
    std::size_t budget = kMaxArgNodes;
    auto converted = ToJson(it->second, budget);
    if (!converted) return Error{"args: " + converted.error()};
    args = converted->is_array() ? std::move(*converted) : Json::array({std::move(*converted)});
  }
  // As Job#initialize builds it for a class the writing process cannot load.
  Json message = Json::object();
  message["queue"] = cron_job.queue;
  message["class"] = cron_job.klass;
  message["args"] = args;
  JobTemplate result;
  result.name = cron_job.name;
  // Job#to_hash, in its order, as redis-rb writes its values (false, nil as "").
  result.fields = {{"name", cron_job.name},      {"klass", cron_job.klass},
                   {"cron", cron_job.cron},      {"description", cron_job.description},
                   {"args", Dump(args)},         {"date_as_argument", "false"},
                   {"message", Dump(message)},   {"status", "enabled"},
                   {"active_job", "false"},      {"queue_name_prefix", ""},
                   {"queue_name_delimiter", ""}, {"last_enqueue_time", ""},
                   {"symbolize_args", "false"}};
  return result;
}

Result<std::unique_ptr<Repairer>> MakeSidekiqCronRepairer(const SourceSpec& source) {
  SourceOptions options;
  options.spec = &source;
  auto reader = SidekiqCronSource::Create(options);
  if (!reader) return Error{reader.error()};
  return std::unique_ptr<Repairer>(new SidekiqCronRepairer(std::move(*reader)));
}

}  // namespace schedwatch::sidekiq_cron
