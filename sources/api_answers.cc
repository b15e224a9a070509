#include "sources/api_answers.h"

#include <fmt/format.h>

#include <vector>

#include "schedwatch/timefmt.h"

namespace schedwatch::api {
namespace {

// Builds the items of a list one at a time through nlohmann's SAX interface, so that neither
// the page's DOM nor an item past its bounds is ever built; the rest of the answer is only
// counted through. The depth of the values read as items: 0 the answer itself, 1 the elements
// of a list answer, 2 those of the list under `key` in an object answer.
class BoundedReader final : public nlohmann::json_sax<Json> {
 public:
  BoundedReader(std::size_t items_depth, const char* key, std::size_t max_items, ValueBounds bounds,
                const ItemHandler& on_item)
      : items_depth_(items_depth),
        key_name_(key),
        max_items_(max_items),
        bounds_(bounds),
        on_item_(on_item),
        in_list_(items_depth == 0) {}

  // The count of items, or what was wrong: kNotJson, kNoList or kTooMany.
  enum class Outcome { kRead, kNotJson, kNoList, kTooMany };
  Outcome Read(std::string_view body) {
    bool parsed = Json::sax_parse(body.begin(), body.end(), this);
    if (too_many_) return Outcome::kTooMany;
    if (not_json_) return Outcome::kNotJson;
    if (!parsed || !list_seen_) return Outcome::kNoList;
    return Outcome::kRead;
  }
  std::size_t items() const { return items_; }

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
    if (in_item_) {
      if (why_ == nullptr) key_ = std::move(name);
    } else if (depth_ == 1 && key_name_ != nullptr) {
      at_key_ = name == key_name_;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    not_json_ = true;
    return false;
  }

 private:
  bool Value(Json&& value) { return Add(std::move(value), false); }
  bool Open(Json::value_t type) { return Add(Json(type), true); }

  bool Add(Json&& value, bool container) {
    if (in_item_) {
      if (container) ++depth_;
      if (why_ != nullptr) return true;
      if (++values_ > bounds_.max_values) return Drop("it holds too many values");
      if (depth_ - items_depth_ > bounds_.max_depth) return Drop("it is nested too deep");
      Json& parent = *stack_.back();
      Json* slot;
      if (parent.is_array()) {
        parent.push_back(std::move(value));
        slot = &parent.back();
      } else {
        slot = &parent[key_];
        *slot = std::move(value);
      }
      if (container) stack_.push_back(slot);
      return true;
    }
    if (in_list_ && depth_ == items_depth_) return StartItem(std::move(value), container);
    bool list = container && value.is_array();
    if (depth_ == 0 && key_name_ == nullptr) {  // the answer is the list
      if (!list) return false;
      in_list_ = list_seen_ = true;
    } else if (depth_ == 0) {  // the answer is an object holding the list
      if (!container || list) return false;
    } else if (depth_ == 1 && key_name_ != nullptr && at_key_) {
      at_key_ = false;
      if (!list) return false;
      in_list_ = list_seen_ = true;
    }
    if (container) ++depth_;
    return true;
  }

  bool StartItem(Json&& value, bool container) {
    if (++items_ > max_items_) {
      too_many_ = true;
      return false;
    }
    values_ = 1;
    why_ = nullptr;
    if (!container) {
      on_item_(&value, items_ - 1, nullptr);
      return true;
    }
    ++depth_;
    in_item_ = true;
    item_ = std::move(value);
    stack_.assign(1, &item_);
    return true;
  }

  // The item passed a bound: what was built of it is freed, the rest is only counted through.
  bool Drop(const char* why) {
    why_ = why;
    stack_.clear();
    item_ = Json();
    return true;
  }

  bool Close() {
    --depth_;
    if (in_item_) {
      if (why_ == nullptr) stack_.pop_back();
      if (depth_ == items_depth_) {
        in_item_ = false;
        on_item_(why_ == nullptr ? &item_ : nullptr, items_ - 1, why_);
        item_ = Json();
      }
    } else if (in_list_ && depth_ + 1 == items_depth_) {
      in_list_ = false;
    }
    return true;
  }

  const std::size_t items_depth_;
  const char* key_name_;
  const std::size_t max_items_;
  const ValueBounds bounds_;
  const ItemHandler& on_item_;
  std::size_t depth_ = 0;  // containers open
  bool in_list_, list_seen_ = false, at_key_ = false;
  bool in_item_ = false, too_many_ = false, not_json_ = false;
  std::size_t items_ = 0, values_ = 0;
  const char* why_ = nullptr;  // why the current item is dropped
  Json item_;
  std::vector<Json*> stack_;  // the current item's open containers
  std::string key_;
};

}  // namespace

Result<std::size_t> ReadItems(std::string_view body, const char* key, const char* what,
                              std::size_t max_items, const ItemHandler& on_item,
                              ValueBounds bounds) {
  BoundedReader reader(key == nullptr ? 1 : 2, key, max_items, bounds, on_item);
  switch (reader.Read(body)) {
    case BoundedReader::Outcome::kRead:
      return reader.items();
    case BoundedReader::Outcome::kNotJson:
      return Error{"the answer is not JSON"};
    case BoundedReader::Outcome::kTooMany:
      return Error{
          fmt::format("the answer holds more than {} {}, more than a page", max_items, what)};
    case BoundedReader::Outcome::kNoList:
      break;
  }
  if (key != nullptr) return Error{fmt::format("the answer has no \"{}\" list", key)};
  return Error{fmt::format("the answer is not a list of {}", what)};
}

Result<Json> ParseBounded(std::string_view body, ValueBounds bounds) {
  Json result;
  std::string error;
  ItemHandler keep = [&](const Json* value, std::size_t, const char* why) {
    if (value != nullptr) result = std::move(*const_cast<Json*>(value));
    if (why != nullptr) error = fmt::format("the answer is not read: {}", why);
  };
  BoundedReader reader(0, nullptr, 1, bounds, keep);
  if (reader.Read(body) == BoundedReader::Outcome::kNotJson) {
    return Error{"the answer is not JSON"};
  }
  if (!error.empty()) return Error{error};
  return result;
}

const Json* Field(const Json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<std::string> StringField(const Json& object, const char* key) {
  const Json* value = Field(object, key);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

std::optional<std::int64_t> TimeField(const Json& object, const char* key) {
  auto text = StringField(object, key);
  return text ? ParseRfc3339(*text) : std::nullopt;
}

void AddRun(RunHistory& history, std::int64_t started, std::optional<std::int64_t> finished,
            RunState state, std::shared_ptr<const RunIdentity> identity) {
  Run run;
  run.started = started;
  run.finished = finished;
  run.identity = std::move(identity);
  switch (state) {
    case RunState::kRunning:
      run.outcome = Run::Outcome::kRunning;
      run.finished.reset();
      break;
    case RunState::kSucceeded:
      run.outcome = Run::Outcome::kSucceeded;
      break;
    case RunState::kFailed:
      run.outcome = Run::Outcome::kFailed;
      break;
    case RunState::kEnded: {
      RunHistory started_only;
      started_only.last_started = started;
      history.Merge(started_only);
      return;
    }
  }
  history.Add(run);
}

}  // namespace schedwatch::api
