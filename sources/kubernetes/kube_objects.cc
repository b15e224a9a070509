#include "sources/kubernetes/kube_objects.h"

#include <fmt/format.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "schedwatch/timefmt.h"
#include "sources/api_answers.h"
#include "sources/problems.h"

namespace schedwatch::kubernetes {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxMessageChars = 300;

// Which members of an object to keep while parsing. A member's filter applies to its value
// (and to each element when the value is an array); a null filter keeps the value whole.
struct Filter {
  struct Member {
    std::string_view name;
    const Filter* filter;
  };
  std::vector<Member> members;

  const Member* Find(std::string_view name) const {
    for (const auto& member : members) {
      if (member.name == name) return &member;
    }
    return nullptr;
  }
};

// Streams a list page through nlohmann's SAX interface: each item of `items` is built with
// only the members its filter keeps and handed over as soon as it ends, so neither the page's
// DOM nor the pod templates, managedFields and annotations schedwatch never reads are built.
class ListReader final : public nlohmann::json_sax<Json> {
 public:
  using ItemHandler = std::function<void(const Json& item, std::size_t index)>;

  ListReader(const Filter& item_filter, ItemHandler on_item)
      : item_filter_(item_filter), root_filter_(RootFilter()), on_item_(std::move(on_item)) {}
  // A reader of one whole object (a watch event) with only what `filter` keeps.
  explicit ListReader(const Filter& filter)
      : item_filter_(filter), root_filter_(filter), list_(false) {}

  // The object, or an Error when the text is not a JSON object.
  Result<Json> ReadObject(std::string_view body, const char* kind) {
    bool parsed = Json::sax_parse(body.begin(), body.end(), this);
    if (!error_.empty()) return Error{fmt::format("malformed JSON in a {}: {}", kind, error_)};
    if (!parsed || !root_.is_object()) return Error{fmt::format("a {} is not a JSON object", kind)};
    return std::move(root_);
  }

  // The list's metadata.resourceVersion ("" when absent), after Read.
  std::string ResourceVersion() const {
    auto metadata = root_.find("metadata");
    if (metadata == root_.end() || !metadata->is_object()) return {};
    auto version = metadata->find("resourceVersion");
    return version != metadata->end() && version->is_string() ? version->get<std::string>() : "";
  }

  // The page's continue token, or an Error when the page is not a list.
  Result<std::string> Read(std::string_view body, const char* kind) {
    bool parsed = Json::sax_parse(body.begin(), body.end(), this);
    if (!error_.empty()) return Error{fmt::format("malformed JSON in a {}: {}", kind, error_)};
    if (!parsed || !root_.is_object()) return Error{fmt::format("a {} is not a JSON object", kind)};
    // The API server always writes a list, [] when empty: null is no list to trust.
    if (items_ == Items::kNull) return Error{fmt::format("a {} has items: null, not a list", kind)};
    if (items_ != Items::kList) return Error{fmt::format("a {} has no items list", kind)};
    auto metadata = root_.find("metadata");
    if (metadata == root_.end() || !metadata->is_object()) return std::string();
    auto token = metadata->find("continue");
    return token != metadata->end() && token->is_string() ? token->get<std::string>() : "";
  }

  // How many items the page held, readable or not.
  std::size_t items() const { return index_; }

  // One item of a list page, the text of one element of its items array, handed over as the
  // `index`th item as if it had been read from the page: a stream cut the page into items.
  Result<bool> ReadItem(std::string_view text, std::size_t index, const char* kind) {
    stack_.assign(1, Frame{nullptr, nullptr});
    items_frame_ = 0;
    skip_ = 0;
    index_ = index;
    next_ = Next::kKeep;
    // A byte order mark is skipped at the start of a text, never inside a list.
    bool parsed =
        !text.empty() && text.front() != '\xEF' && Json::sax_parse(text.begin(), text.end(), this);
    if (!error_.empty()) {
      return Error{fmt::format("malformed JSON in a {}: item {}: {}", kind, index, error_)};
    }
    if (!parsed || index_ != index + 1) {
      return Error{fmt::format("malformed JSON in a {}: item {} is no JSON value", kind, index)};
    }
    return true;
  }

  bool null() override { return Value(Json(nullptr)); }
  bool boolean(bool value) override { return Value(Json(value)); }
  bool number_integer(number_integer_t value) override { return Value(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return Value(Json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return Value(Json(value)); }
  bool string(string_t& value) override { return Value(Json(std::move(value))); }
  bool binary(binary_t&) override { return Value(Json()); }  // not in JSON text
  bool start_object(std::size_t) override { return Open(Json::value_t::object); }
  bool start_array(std::size_t) override { return Open(Json::value_t::array); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& name) override {
    if (skip_ > 0) return true;
    const Frame& top = stack_.back();
    if (list_ && stack_.size() == 1 && name == "items") {
      next_ = Next::kItems;
      return true;
    }
    const Filter::Member* member = nullptr;
    if (top.filter != nullptr && (member = top.filter->Find(name)) == nullptr) {
      next_ = Next::kSkip;
      return true;
    }
    next_ = Next::kKeep;
    target_ = &(*top.value)[name];
    target_filter_ = member != nullptr ? member->filter : nullptr;
    return true;
  }

  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    error_ = error.what();
    return false;
  }

 private:
  enum class Next { kKeep, kSkip, kItems };
  enum class Items { kAbsent, kList, kNull, kOther };
  struct Frame {
    Json* value;  // null for the items list, whose elements are streamed
    const Filter* filter;
  };

  static const Filter& RootFilter() {
    static const Filter kContinue{{{"continue", nullptr}, {"resourceVersion", nullptr}}};
    static const Filter kRoot{{{"kind", nullptr}, {"metadata", &kContinue}}};
    return kRoot;
  }

  bool InItems() const { return !stack_.empty() && stack_.back().value == nullptr; }

  // Counts a value built in an item of the list (api::ValueBounds, as the GitHub and GitLab
  // answers are read). Past the bounds the item is dropped: what was built of it is freed,
  // the rest of its text skipped, and it is handed over as discarded, a problem.
  bool Within(bool container) {
    if (!list_ || stack_.size() <= items_frame_ || stack_[items_frame_].value != nullptr) {
      return true;  // not in the items list (a member after it may sit where it was)
    }
    std::size_t open = stack_.size() - items_frame_ - 1;  // the item's containers open
    item_values_ = open == 0 ? 1 : item_values_ + 1;
    if (item_values_ <= bounds_.max_values && open + container <= bounds_.max_depth) return true;
    stack_.resize(items_frame_ + 1);
    item_ = Json();
    skip_ = static_cast<int>(open + container);
    dropped_ = true;  // skip_ >= 1: only a value inside an item passes a bound
    return false;
  }

  bool Value(Json&& value) {
    if (skip_ > 0) return true;
    if (stack_.empty()) return false;  // a scalar page: not an object
    if (!Within(false)) return true;
    Frame& top = stack_.back();
    if (top.value == nullptr) {
      on_item_(value, index_++);
    } else if (top.value->is_array()) {
      top.value->push_back(std::move(value));
    } else if (next_ == Next::kItems) {
      items_ = value.is_null() ? Items::kNull : Items::kOther;
    } else if (next_ == Next::kKeep) {
      *target_ = std::move(value);
    }
    return true;
  }

  bool Open(Json::value_t type) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (!stack_.empty() && !Within(true)) return true;
    if (stack_.empty()) {
      if (type != Json::value_t::object) return false;
      root_ = Json(type);
      stack_.push_back({&root_, &root_filter_});
      return true;
    }
    Frame& top = stack_.back();
    if (top.value == nullptr) {
      item_ = Json(type);
      stack_.push_back({&item_, &item_filter_});
    } else if (top.value->is_array()) {
      top.value->push_back(Json(type));
      stack_.push_back({&top.value->back(), top.filter});
    } else if (next_ == Next::kItems) {
      items_ = type == Json::value_t::array ? Items::kList : Items::kOther;
      if (items_ == Items::kList) {
        stack_.push_back({nullptr, nullptr});
        items_frame_ = stack_.size() - 1;
      } else {
        skip_ = 1;
      }
    } else if (next_ == Next::kSkip) {
      skip_ = 1;
    } else {
      *target_ = Json(type);
      stack_.push_back({target_, target_filter_});
    }
    return true;
  }

  bool Close() {
    if (skip_ > 0) {
      if (--skip_ == 0 && dropped_) {
        dropped_ = false;
        on_item_(Json(Json::value_t::discarded), index_++);
      }
      return true;
    }
    stack_.pop_back();
    if (InItems()) {
      on_item_(item_, index_++);
      item_ = Json();
    }
    return true;
  }

  const Filter& item_filter_;
  const Filter& root_filter_;
  bool list_ = true;
  ItemHandler on_item_;
  Json root_, item_;
  std::vector<Frame> stack_;
  Next next_ = Next::kKeep;
  Json* target_ = nullptr;
  const Filter* target_filter_ = nullptr;
  int skip_ = 0;  // depth inside a value being skipped
  Items items_ = Items::kAbsent;
  std::size_t index_ = 0;
  std::string error_;
  api::ValueBounds bounds_;
  std::size_t items_frame_ = std::string::npos;  // the items list's frame in stack_
  std::size_t item_values_ = 0;                  // values built of the current item
  bool dropped_ = false;                         // the current item passed the bounds
};

const Filter& CronJobFilter(bool event = false) {
  static const Filter kRole{{{kRoleLabel, nullptr}}};
  static const Filter kVersion{{{kSpecVersionAnnotation, nullptr}}};
  static const Filter kMetadata{{{"name", nullptr},
                                 {"namespace", nullptr},
                                 {"uid", nullptr},
                                 {"resourceVersion", nullptr},
                                 {"labels", &kRole},
                                 {"annotations", &kVersion}}};
  static const Filter kSpec{{{"schedule", nullptr}, {"timeZone", nullptr}, {"suspend", nullptr}}};
  static const Filter kReference{{{"uid", nullptr}}};
  static const Filter kStatus{
      {{"lastScheduleTime", nullptr}, {"lastSuccessfulTime", nullptr}, {"active", &kReference}}};
  static const Filter kItem{{{"metadata", &kMetadata}, {"spec", &kSpec}, {"status", &kStatus}}};
  static const Filter kObject{{{"metadata", &kMetadata},
                               {"spec", &kSpec},
                               {"status", &kStatus},
                               {"code", nullptr},
                               {"reason", nullptr},
                               {"message", nullptr}}};
  static const Filter kEvent{{{"type", nullptr}, {"object", &kObject}}};
  return event ? kEvent : kItem;
}

const Filter& JobFilter(bool event = false) {
  static const Filter kReference{{{"kind", nullptr}, {"uid", nullptr}}};
  static const Filter kMetadata{{{"name", nullptr},
                                 {"namespace", nullptr},
                                 {"uid", nullptr},
                                 {"resourceVersion", nullptr},
                                 {"creationTimestamp", nullptr},
                                 {"ownerReferences", &kReference}}};
  static const Filter kCondition{{{"type", nullptr},
                                  {"status", nullptr},
                                  {"reason", nullptr},
                                  {"lastTransitionTime", nullptr}}};
  static const Filter kStatus{
      {{"startTime", nullptr}, {"completionTime", nullptr}, {"conditions", &kCondition}}};
  static const Filter kItem{{{"metadata", &kMetadata}, {"status", &kStatus}}};
  static const Filter kObject{{{"metadata", &kMetadata},
                               {"status", &kStatus},
                               {"code", nullptr},
                               {"reason", nullptr},
                               {"message", nullptr}}};
  static const Filter kEvent{{{"type", nullptr}, {"object", &kObject}}};
  return event ? kEvent : kItem;
}

// Reads the fields of one item, remembering the first thing wrong with it.
class Item {
 public:
  // `kind` and `index` name the item in problems ("CronJob ops/backup", else
  // "CronJobList item 3"); the name is only formatted when there is a problem.
  Item(const Json& item, const char* kind, std::size_t index)
      : item_(item), kind_(kind), index_(index) {
    if (item.is_discarded()) {
      Fail("", "is nested deeper than 32 or holds more than 10,000 values");
      return;
    }
    if (!item.is_object()) {
      Fail("", "is not an object");
      return;
    }
    auto metadata = item.find("metadata");
    if (metadata == item.end() || !metadata->is_object()) {
      Fail("metadata", metadata == item.end() ? "is missing" : "is not an object");
    }
  }

  // The member `key` of `object`, or null when absent; a problem when not of `type`.
  const Json* Get(const Json& object, const char* key, Json::value_t type, const char* field) {
    if (!problem_.empty() || !object.is_object()) return nullptr;
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    bool ok =
        it->type() == type || (type == Json::value_t::number_integer && it->is_number_integer());
    if (!ok) {
      Fail(field, fmt::format("is {}, not {}", it->type_name(), Json(type).type_name()));
      return nullptr;
    }
    return &*it;
  }
  const Json* Object(const Json& o, const char* key, const char* field) {
    return Get(o, key, Json::value_t::object, field);
  }
  const Json* Array(const Json& o, const char* key, const char* field) {
    return Get(o, key, Json::value_t::array, field);
  }

  std::string Text(const Json& object, const char* key, const char* field, bool required) {
    const Json* value = Get(object, key, Json::value_t::string, field);
    if (value == nullptr) {
      if (required) Fail(field, "is missing");
      return {};
    }
    if (required && value->get_ref<const std::string&>().empty()) Fail(field, "is empty");
    return value->get<std::string>();
  }

  std::optional<std::int64_t> Time(const Json& object, const char* key, const char* field) {
    std::string text = Text(object, key, field, false);
    if (text.empty()) return std::nullopt;
    auto time = ParseRfc3339(text);
    if (!time) Fail(field, fmt::format("\"{}\" is not an RFC 3339 time", text));
    return time;
  }

  bool Flag(const Json& object, const char* key, const char* field) {
    const Json* value = Get(object, key, Json::value_t::boolean, field);
    return value != nullptr && value->get<bool>();
  }

  void Fail(const std::string& field, const std::string& what) {
    if (!problem_.empty()) return;
    std::string name = Name();
    problem_ = field.empty() ? fmt::format("{} {}", name, what)
                             : fmt::format("{}: {} {}", name, field, what);
  }
  bool ok() const { return problem_.empty(); }
  SourceProblem problem() const { return MakeProblem(Reason::kMalformedObject, problem_); }

 private:
  std::string Name() const {
    const Json* metadata = nullptr;
    if (item_.is_object() && item_.contains("metadata")) metadata = &item_["metadata"];
    if (metadata != nullptr && metadata->is_object()) {
      auto name = metadata->find("name");
      auto namespace_name = metadata->find("namespace");
      if (name != metadata->end() && name->is_string()) {
        bool namespaced = namespace_name != metadata->end() && namespace_name->is_string();
        return fmt::format("{} {}{}{}", kind_,
                           namespaced ? namespace_name->get_ref<const std::string&>() : "",
                           namespaced ? "/" : "", name->get_ref<const std::string&>());
      }
    }
    return fmt::format("{}List item {}", kind_, index_);
  }

  const Json& item_;
  const char* kind_;
  std::size_t index_;
  std::string problem_;
};

// "ops/db-backup": the item's namespace and name (a problem when the name is missing).
std::string Identify(Item& item, const Json& metadata) {
  std::string name = item.Text(metadata, "name", "metadata.name", true);
  std::string namespace_name = item.Text(metadata, "namespace", "metadata.namespace", false);
  return namespace_name.empty() ? name : namespace_name + "/" + name;
}

std::string Truncate(std::string text) {
  if (text.size() > kMaxMessageChars) text = text.substr(0, kMaxMessageChars) + "...";
  return text;
}

// Old CronJobs may carry their zone in the schedule ("CRON_TZ=Europe/Berlin 0 2 * * *").
void SplitZonePrefix(std::string& schedule, std::string& timezone) {
  for (std::string_view prefix : {"CRON_TZ=", "TZ="}) {
    if (schedule.rfind(prefix, 0) != 0) continue;
    auto space = schedule.find(' ');
    if (space == std::string::npos) return;
    if (timezone.empty()) timezone = schedule.substr(prefix.size(), space - prefix.size());
    schedule.erase(0, schedule.find_first_not_of(' ', space));
    return;
  }
}

// How a cache names an item: its uid, else namespace/name, else its place in the list.
std::string KeyOf(const Json& item, std::size_t index) {
  if (item.is_object()) {
    auto metadata = item.find("metadata");
    if (metadata != item.end() && metadata->is_object()) {
      auto uid = metadata->find("uid");
      if (uid != metadata->end() && uid->is_string() && !uid->get_ref<const std::string&>().empty())
        return uid->get<std::string>();
      auto name = metadata->find("name");
      auto namespace_name = metadata->find("namespace");
      if (name != metadata->end() && name->is_string()) {
        return fmt::format("name:{}/{}",
                           namespace_name != metadata->end() && namespace_name->is_string()
                               ? namespace_name->get<std::string>()
                               : "",
                           name->get<std::string>());
      }
    }
  }
  return fmt::format("item:{}", index);
}

template <typename T>
void Keep(Mapped<T> mapped, Page<T>& page) {
  if (mapped.value) page.items.push_back(std::move(*mapped.value));
  if (mapped.problem) page.problems.push_back(std::move(*mapped.problem));
}

// One watch event line read with `filter`, its object mapped by `map`.
template <typename T, typename Map>
Result<WatchEvent<T>> ReadEvent(std::string_view line, const Filter& filter, const char* kind,
                                Map map) {
  ListReader reader(filter);
  auto root = reader.ReadObject(line, kind);
  if (!root) return Error{root.error()};
  WatchEvent<T> event;
  auto type = root->find("type");
  if (type == root->end() || !type->is_string())
    return Error{fmt::format("a {} has no type", kind)};
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "ADDED") {
    event.type = EventType::kAdded;
  } else if (name == "MODIFIED") {
    event.type = EventType::kModified;
  } else if (name == "DELETED") {
    event.type = EventType::kDeleted;
  } else if (name == "BOOKMARK") {
    event.type = EventType::kBookmark;
  } else if (name == "ERROR") {
    event.type = EventType::kError;
  } else {
    return Error{fmt::format("a {} has the unknown type \"{}\"", kind, Truncate(name))};
  }
  auto object = root->find("object");
  if (object == root->end() || !object->is_object()) {
    return Error{fmt::format("a {} of type {} has no object", kind, name)};
  }
  if (event.type == EventType::kError) {
    auto text = [&object](const char* key) {
      auto it = object->find(key);
      return it != object->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto code = object->find("code");
    event.code = code != object->end() && code->is_number_integer() ? code->get<long>() : 0;
    event.reason = text("reason");
    event.message = Truncate(text("message"));
    return event;
  }
  auto metadata = object->find("metadata");
  if (metadata != object->end() && metadata->is_object()) {
    auto version = metadata->find("resourceVersion");
    if (version != metadata->end() && version->is_string()) {
      event.resource_version = version->get<std::string>();
    }
  }
  if (event.type == EventType::kBookmark) return event;
  event.object = map(*object);
  return event;
}

// `unlabelled`: keep CronJobs without the role label too (role ""), for discover.
Mapped<CronJob> MapCronJob(const Json& item, std::size_t i, bool unlabelled = false) {
  Mapped<CronJob> mapped{KeyOf(item, i), std::nullopt, std::nullopt, {}};
  Item reader(item, "CronJob", i);
  if (!reader.ok()) {
    mapped.problem = reader.problem();
    return mapped;
  }
  const Json& metadata = item["metadata"];
  // Every item is named: one without a name is a problem even when it is not ours.
  reader.Text(metadata, "name", "metadata.name", true);
  const Json* labels = reader.Object(metadata, "labels", "metadata.labels");
  std::string role =
      labels != nullptr ? reader.Text(*labels, kRoleLabel, "the role label", false) : "";
  if (role.empty()) {
    // Not schedwatch's, unless the label is there but unusable.
    bool labelled = labels != nullptr && labels->contains(kRoleLabel);
    if (!reader.ok() || labelled) {
      if (reader.ok()) reader.Fail("the role label", "is empty");
      mapped.problem = reader.problem();
    }
    if (!unlabelled || mapped.problem) return mapped;
  }
  CronJob cronjob;
  std::string id = Identify(reader, metadata);
  cronjob.uid = reader.Text(metadata, "uid", "metadata.uid", true);
  std::string spec_version;
  if (const Json* annotations = reader.Object(metadata, "annotations", "metadata.annotations")) {
    spec_version =
        reader.Text(*annotations, kSpecVersionAnnotation, "the spec-version annotation", false);
  }
  const Json* spec = reader.Object(item, "spec", "spec");
  if (spec == nullptr && reader.ok()) reader.Fail("spec", "is missing");
  std::string schedule, timezone;
  bool enabled = true;
  if (spec != nullptr) {
    schedule = reader.Text(*spec, "schedule", "spec.schedule", true);
    timezone = reader.Text(*spec, "timeZone", "spec.timeZone", false);
    enabled = !reader.Flag(*spec, "suspend", "spec.suspend");
  }
  if (const Json* status = reader.Object(item, "status", "status")) {
    cronjob.last_schedule = reader.Time(*status, "lastScheduleTime", "status.lastScheduleTime");
    cronjob.last_successful =
        reader.Time(*status, "lastSuccessfulTime", "status.lastSuccessfulTime");
    if (const Json* active = reader.Array(*status, "active", "status.active")) {
      for (const Json& reference : *active) {
        if (!reference.is_object()) {
          reader.Fail("status.active[]", "is not an object");
          break;
        }
        std::string uid = reader.Text(reference, "uid", "status.active[].uid", true);
        if (reader.ok()) cronjob.active_job_uids.push_back(std::move(uid));
      }
    }
  }
  if (!reader.ok()) {
    mapped.problem = reader.problem();
    return mapped;
  }
  SplitZonePrefix(schedule, timezone);
  if (timezone.empty()) timezone = kDefaultTimeZone;
  cronjob.object = LiveObject(id, role, schedule, timezone, spec_version, enabled);
  mapped.value = std::move(cronjob);
  return mapped;
}

// `owners` null: every Job some CronJob owns is kept (owner 0, owner_uid set).
Mapped<Job> MapJob(const Json& item, std::size_t i,
                   const std::unordered_map<std::string, std::size_t>* owners) {
  Mapped<Job> mapped{KeyOf(item, i), std::nullopt, std::nullopt, {}};
  Item reader(item, "Job", i);
  if (!reader.ok()) {
    mapped.problem = reader.problem();
    return mapped;
  }
  const Json& metadata = item["metadata"];
  reader.Text(metadata, "name", "metadata.name", true);  // a problem even when not ours
  // Most Jobs of a cluster are not ours: find the owner before reading anything else.
  const Json* references = reader.Array(metadata, "ownerReferences", "metadata.ownerReferences");
  std::optional<std::size_t> owner;
  std::string owner_uid;
  for (std::size_t r = 0; references != nullptr && r < references->size() && !owner; ++r) {
    const Json& reference = (*references)[r];
    if (!reference.is_object()) continue;
    auto kind = reference.find("kind");
    auto uid = reference.find("uid");
    if (kind == reference.end() || *kind != "CronJob" || uid == reference.end() ||
        !uid->is_string()) {
      continue;
    }
    if (owners == nullptr) {
      owner = 0;
      owner_uid = uid->get<std::string>();
      mapped.owner = owner_uid;
    } else if (auto it = owners->find(uid->get_ref<const std::string&>()); it != owners->end()) {
      owner = it->second;
      owner_uid = it->first;
    }
  }
  if (!owner) {
    if (!reader.ok()) mapped.problem = reader.problem();
    return mapped;
  }
  Job job;
  job.owner = *owner;
  job.owner_uid = std::move(owner_uid);
  job.uid = reader.Text(metadata, "uid", "metadata.uid", true);
  if (std::string name = reader.Text(metadata, "name", "metadata.name", false); !name.empty()) {
    job.name = std::make_shared<const RunIdentity>(RunIdentity{std::move(name), ""});
  }
  auto created = reader.Time(metadata, "creationTimestamp", "metadata.creationTimestamp");
  std::optional<std::int64_t> start, completion;
  bool complete = false, failed = false, suspended = false;
  std::string complete_reason, failed_reason;
  std::optional<std::int64_t> failed_at, complete_at;
  if (const Json* status = reader.Object(item, "status", "status")) {
    start = reader.Time(*status, "startTime", "status.startTime");
    completion = reader.Time(*status, "completionTime", "status.completionTime");
    if (const Json* conditions = reader.Array(*status, "conditions", "status.conditions")) {
      for (const Json& condition : *conditions) {
        if (!condition.is_object()) {
          reader.Fail("status.conditions[]", "is not an object");
          break;
        }
        std::string type = reader.Text(condition, "type", "status.conditions[].type", true);
        std::string state = reader.Text(condition, "status", "status.conditions[].status", true);
        std::string reason = reader.Text(condition, "reason", "status.conditions[].reason", false);
        auto changed =
            reader.Time(condition, "lastTransitionTime", "status.conditions[].lastTransitionTime");
        if (state != "True") continue;
        // Other types (FailureTarget, SuccessCriteriaMet, ones yet to come) decide nothing.
        if (type == "Complete") {
          complete = true;
          complete_reason = reason;
          complete_at = changed;
        } else if (type == "Failed") {
          failed = true;
          failed_reason = reason;
          failed_at = changed;
        } else if (type == "Suspended") {
          suspended = true;
        }
      }
    }
  }
  if (!reader.ok()) {
    mapped.problem = reader.problem();
    return mapped;
  }
  if (!start && !created) {
    reader.Fail("status.startTime", "and metadata.creationTimestamp are both missing");
    mapped.problem = reader.problem();
    return mapped;
  }
  job.started = start.value_or(*created);
  if (complete) {
    job.state = JobState::kSucceeded;
    job.reason = complete_reason;
    job.finished = completion ? completion : complete_at ? complete_at : job.started;
  } else if (failed) {
    job.state = JobState::kFailed;
    job.reason = failed_reason;
    job.finished = failed_at.value_or(job.started);
  } else if (suspended) {
    job.state = JobState::kSuspended;
  }
  mapped.value = std::move(job);
  return mapped;
}

}  // namespace

Result<Page<CronJob>> ReadCronJobList(std::string_view body,
                                      const std::function<void(Mapped<CronJob>)>& on_item) {
  Page<CronJob> result;
  ListReader reader(CronJobFilter(), [&on_item](const Json& item, std::size_t index) {
    on_item(MapCronJob(item, index));
  });
  auto token = reader.Read(body, "CronJobList");
  if (!token) return Error{token.error()};
  result.listed = reader.items();
  result.continue_token = std::move(*token);
  result.resource_version = reader.ResourceVersion();
  return result;
}

Result<Page<CronJob>> ParseCronJobList(std::string_view body) {
  Page<CronJob> result;
  auto page =
      ReadCronJobList(body, [&result](Mapped<CronJob> mapped) { Keep(std::move(mapped), result); });
  if (!page) return Error{page.error()};
  page->items = std::move(result.items);
  page->problems = std::move(result.problems);
  return page;
}

namespace {

Result<Page<Job>> ReadJobs(std::string_view body,
                           const std::unordered_map<std::string, std::size_t>* owners,
                           const std::function<void(Mapped<Job>)>& on_item) {
  Page<Job> result;
  ListReader reader(JobFilter(), [&](const Json& item, std::size_t index) {
    on_item(MapJob(item, index, owners));
  });
  auto token = reader.Read(body, "JobList");
  if (!token) return Error{token.error()};
  result.listed = reader.items();
  result.continue_token = std::move(*token);
  result.resource_version = reader.ResourceVersion();
  return result;
}

Result<Page<Job>> KeepJobs(std::string_view body,
                           const std::unordered_map<std::string, std::size_t>* owners) {
  Page<Job> result;
  auto page =
      ReadJobs(body, owners, [&result](Mapped<Job> mapped) { Keep(std::move(mapped), result); });
  if (!page) return Error{page.error()};
  page->items = std::move(result.items);
  page->problems = std::move(result.problems);
  return page;
}

}  // namespace

Result<Page<Job>> ParseJobList(std::string_view body,
                               const std::unordered_map<std::string, std::size_t>& owners) {
  return KeepJobs(body, &owners);
}

Result<Page<Job>> ParseOwnedJobList(std::string_view body) { return KeepJobs(body, nullptr); }

Result<Page<Job>> ReadOwnedJobList(std::string_view body,
                                   const std::function<void(Mapped<Job>)>& on_item) {
  return ReadJobs(body, nullptr, on_item);
}

// Cuts a list page as it streams into the texts of its items, each read as it ends by the
// same reader a whole page is read with, and the rest of the page (the page with its items
// arrays emptied), read at the end. Only JSON's string, escape and nesting states are tracked
// here: each item's text and the rest are parsed strictly, so a page this cuts wrongly (not
// JSON) fails there, and a page that is JSON is cut as the whole-page parser would read it.
class PageStream::Impl {
 public:
  using ItemHandler = std::function<void(const Json& item, std::size_t index)>;

  Impl(const Filter& filter, const char* kind, ItemHandler on_item, Limits limits)
      : filter_(filter),
        kind_(kind),
        on_item_(std::move(on_item)),
        limits_(limits),
        reader_(filter, [this](const Json& item, std::size_t index) { on_item_(item, index); }) {}

  bool Feed(std::string_view data) {
    if (!error_.empty()) return false;
    for (char c : data) {
      if (in_items_ ? !ItemByte(c) : !RestByte(c)) return false;
    }
    return true;
  }

  Result<PageEnd> Finish() {
    if (!error_.empty()) return Error{error_};
    if (in_items_)
      return Error{fmt::format("malformed JSON in a {}: it ends inside its items", kind_)};
    std::size_t stray = 0;  // the rest's items arrays are empty
    ListReader rest(filter_, [&stray](const Json&, std::size_t) { ++stray; });
    auto token = rest.Read(rest_, kind_);
    if (!token) return Error{token.error()};
    if (stray != 0) return Error{fmt::format("a {} was cut wrongly", kind_)};
    return PageEnd{std::move(*token), rest.ResourceVersion(), items_};
  }

  bool over_limit() const { return over_limit_; }

 private:
  // Where the root object is at: between its members, in a key, before its value.
  enum class Member { kNone, kKey, kAfterKey, kValue, kOther };

  bool Fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  // Tracks a string's end; true while `c` is inside one (its closing quote included).
  bool InString(char c) {
    if (!in_string_) return false;
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
    } else if (c == '"') {
      in_string_ = false;
    }
    return true;
  }

  bool ItemByte(char c) {
    if (!InString(c)) {
      if (c == '"') {
        in_string_ = true;
      } else if (item_depth_ == 0 && (c == ',' || c == ']')) {
        bool empty_list = c == ']' && items_ == first_item_ &&
                          item_.find_first_not_of(" \t\r\n") == std::string::npos;
        if (!empty_list && !EndItem()) return false;
        if (c == ']') {
          in_items_ = false;
          --depth_;
          rest_.push_back(c);
        }
        return true;
      } else if (c == '{' || c == '[') {
        ++item_depth_;
      } else if (c == '}' || c == ']') {
        if (item_depth_ == 0)
          return Fail(fmt::format("malformed JSON in a {}: a stray }} in its items", kind_));
        --item_depth_;
      }
    }
    item_.push_back(c);
    if (item_.size() > limits_.max_item_bytes) {
      over_limit_ = true;
      return Fail(
          fmt::format("{} item {} is larger than {} bytes", kind_, items_, limits_.max_item_bytes));
    }
    return true;
  }

  bool EndItem() {
    auto read = reader_.ReadItem(item_, items_, kind_);
    if (!read) return Fail(read.error());
    ++items_;
    item_.clear();
    return true;
  }

  bool RestByte(char c) {
    rest_.push_back(c);
    if (rest_.size() > limits_.max_rest_bytes) {
      over_limit_ = true;
      return Fail(fmt::format("a {} has more than {} bytes besides its items", kind_,
                              limits_.max_rest_bytes));
    }
    bool in_root = depth_ == 1 && root_is_object_;
    if (InString(c)) {
      if (in_root && member_ == Member::kKey) {
        key_.push_back(c);
        if (!in_string_) {
          member_ = Member::kAfterKey;
          Json name = Json::parse(key_, nullptr, /*allow_exceptions=*/false);
          items_key_ = name.is_string() && name.get_ref<const std::string&>() == "items";
        }
      }
      return true;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return true;
    if (c == '"') {
      in_string_ = true;
      if (in_root && member_ == Member::kKey) key_.assign(1, c);
    }
    if (in_root && member_ == Member::kValue) {
      member_ = Member::kOther;
      if (c == '[' && items_key_) {
        // The root's items: its elements are cut out of the rest and read one by one.
        ++depth_;
        in_items_ = true;
        first_item_ = items_;
        item_depth_ = 0;
        item_.clear();
        return true;
      }
    }
    if (c == '{' || c == '[') {
      if (++depth_ == 1) {
        root_is_object_ = c == '{';
        member_ = root_is_object_ ? Member::kKey : Member::kNone;
      }
    } else if (c == '}' || c == ']') {
      if (depth_ > 0) --depth_;
    } else if (in_root && c == ',') {
      member_ = Member::kKey;
    } else if (in_root && c == ':' && member_ == Member::kAfterKey) {
      member_ = Member::kValue;
    }
    return true;
  }

  const Filter& filter_;
  const char* kind_;
  ItemHandler on_item_;
  Limits limits_;
  ListReader reader_;
  std::string rest_, item_, key_, error_;
  bool in_string_ = false, escaped_ = false;
  std::size_t depth_ = 0;  // nesting in the rest
  bool root_is_object_ = false;
  Member member_ = Member::kNone;
  bool items_key_ = false;  // the root member being read is "items"
  bool in_items_ = false;
  bool over_limit_ = false;
  std::size_t item_depth_ = 0;  // nesting inside the current item
  std::size_t items_ = 0, first_item_ = 0;
};

PageStream::PageStream(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PageStream::PageStream(PageStream&&) noexcept = default;
PageStream& PageStream::operator=(PageStream&&) noexcept = default;
PageStream::~PageStream() = default;
bool PageStream::Feed(std::string_view data) { return impl_->Feed(data); }
Result<PageEnd> PageStream::Finish() { return impl_->Finish(); }
bool PageStream::over_limit() const { return impl_->over_limit(); }

PageStream StreamCronJobList(std::function<void(Mapped<CronJob>)> on_item,
                             PageStream::Limits limits) {
  return PageStream(std::make_unique<PageStream::Impl>(
      CronJobFilter(), "CronJobList",
      [on_item = std::move(on_item)](const Json& item, std::size_t index) {
        on_item(MapCronJob(item, index));
      },
      limits));
}

PageStream StreamEveryCronJobList(std::function<void(Mapped<CronJob>)> on_item,
                                  PageStream::Limits limits) {
  return PageStream(std::make_unique<PageStream::Impl>(
      CronJobFilter(), "CronJobList",
      [on_item = std::move(on_item)](const Json& item, std::size_t index) {
        on_item(MapCronJob(item, index, /*unlabelled=*/true));
      },
      limits));
}

PageStream StreamJobList(const std::unordered_map<std::string, std::size_t>& owners,
                         std::function<void(Mapped<Job>)> on_item, PageStream::Limits limits) {
  return PageStream(std::make_unique<PageStream::Impl>(
      JobFilter(), "JobList",
      [&owners, on_item = std::move(on_item)](const Json& item, std::size_t index) {
        on_item(MapJob(item, index, &owners));
      },
      limits));
}

PageStream StreamOwnedJobList(std::function<void(Mapped<Job>)> on_item, PageStream::Limits limits) {
  return PageStream(std::make_unique<PageStream::Impl>(
      JobFilter(), "JobList",
      [on_item = std::move(on_item)](const Json& item, std::size_t index) {
        on_item(MapJob(item, index, nullptr));
      },
      limits));
}

Result<WatchEvent<CronJob>> ParseCronJobEvent(std::string_view line) {
  return ReadEvent<CronJob>(line, CronJobFilter(true), "CronJob watch event",
                            [](const Json& object) { return MapCronJob(object, 0); });
}

Result<WatchEvent<Job>> ParseJobEvent(std::string_view line) {
  return ReadEvent<Job>(line, JobFilter(true), "Job watch event",
                        [](const Json& object) { return MapJob(object, 0, nullptr); });
}

std::optional<std::string> NothingReadable(std::size_t listed,
                                           const std::vector<SourceProblem>& problems,
                                           const char* kind) {
  if (listed == 0 || problems.size() < listed) return std::nullopt;
  return NothingReadable(listed, problems.size(), problems.front().message, kind);
}

std::optional<std::string> NothingReadable(std::size_t listed, std::size_t unreadable,
                                           const std::string& first_message, const char* kind) {
  if (listed == 0 || unreadable < listed) return std::nullopt;
  return fmt::format("none of the {} {} listed can be read (first: {})", listed, kind,
                     first_message);
}

SourceSnapshot BuildSnapshot(const std::vector<CronJob>& cronjobs, const std::vector<Job>& jobs,
                             bool history_by_id) {
  SourceSnapshot snapshot;
  snapshot.objects.reserve(cronjobs.size());
  std::unordered_set<std::string_view> listed_jobs;
  listed_jobs.reserve(jobs.size());
  for (const Job& job : jobs) listed_jobs.insert(job.uid);
  for (const CronJob& cronjob : cronjobs) {
    snapshot.objects.push_back(cronjob.object);
    RunHistory& history =
        snapshot.history[std::string(history_by_id ? cronjob.object.id() : cronjob.object.role())];
    RunHistory summary;
    summary.last_started = cronjob.last_schedule;
    summary.last_success = cronjob.last_successful;
    history.Merge(summary);
    for (const auto& uid : cronjob.active_job_uids) {
      if (!listed_jobs.count(uid) && cronjob.last_schedule) {
        history.Add(Run{*cronjob.last_schedule, std::nullopt, Run::Outcome::kRunning});
      }
    }
  }
  for (const Job& job : jobs) {
    if (job.owner >= cronjobs.size()) continue;
    const LiveObject& owner = cronjobs[job.owner].object;
    RunHistory& history = snapshot.history[std::string(history_by_id ? owner.id() : owner.role())];
    switch (job.state) {
      case JobState::kRunning:
        history.Add(Run{job.started, std::nullopt, Run::Outcome::kRunning});
        break;
      case JobState::kSucceeded:
        history.Add(Run{job.started, job.finished, Run::Outcome::kSucceeded, job.name});
        break;
      case JobState::kFailed:
        history.Add(Run{job.started, job.finished, Run::Outcome::kFailed, job.name});
        break;
      case JobState::kSuspended:
        break;  // not running, not finished: nothing to say about the role's runs
    }
  }
  return snapshot;
}

std::string StatusReason(std::string_view body) {
  Json status = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!status.is_object() || status.value("kind", Json()) != "Status") return {};
  auto reason = status.find("reason");
  return reason != status.end() && reason->is_string() ? reason->get<std::string>() : "";
}

std::string DescribeApiError(long status, std::string_view body, std::string_view permission) {
  std::string reason, message;
  Json parsed = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.value("kind", Json()) == "Status") {
    auto text = [&parsed](const char* key) {
      auto it = parsed.find(key);
      return it != parsed.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    reason = text("reason");
    message = text("message");
  } else {
    // Not the API server speaking (a proxy, a load balancer): a little of what it said.
    for (char c : body.substr(0, 120)) {
      bool blank = c == '\n' || c == '\r' || c == '\t' || c == ' ';
      if (blank && (message.empty() || message.back() == ' ')) continue;
      message.push_back(blank ? ' ' : (static_cast<unsigned char>(c) < 0x20 ? '?' : c));
    }
  }
  std::string text = fmt::format("HTTP {}", status);
  if (!reason.empty()) text += " " + reason;
  if (!message.empty() && message != reason) text += ": " + Truncate(message);
  if (status == 401) text += " (the token or client certificate was refused)";
  if (status == 403) {
    text += fmt::format(" (grant {} in API group batch; see examples/kubernetes/)", permission);
  }
  return text;
}

}  // namespace schedwatch::kubernetes
