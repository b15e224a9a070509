#include "sources/systemd/unit_properties.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace schedwatch::systemd {
namespace {

using nlohmann::json;

json ValueToJson(const PropertyValue& value) {
  const std::string& sig = value.signature;
  json out = json::array({sig});
  if (sig == "s" || sig == "o" || sig == "ay") {
    out.push_back(value.text);
  } else if (sig == "t" || sig == "u") {
    out.push_back(value.unsigned_number);
  } else if (sig == "x" || sig == "i") {
    out.push_back(value.number);
  } else if (sig == "b") {
    out.push_back(value.flag);
  } else if (sig == "as") {
    out.push_back(value.texts);
  } else if (sig == "a(sst)" || sig == "a(stt)") {
    json triples = json::array();
    for (const auto& t : value.triples) {
      if (sig == "a(sst)") {
        triples.push_back(json::array({t.base, t.text, t.next}));
      } else {
        triples.push_back(json::array({t.base, t.value, t.next}));
      }
    }
    out.push_back(std::move(triples));
  }
  return out;
}

json BagToJson(const PropertyBag& bag) {
  json out = json::object();
  for (const auto& [name, value] : bag) out[name] = ValueToJson(value);
  return out;
}

json UnitToJson(const UnitReading& unit) {
  return {{"name", unit.name}, {"unit", BagToJson(unit.unit)}, {"kind", BagToJson(unit.kind)}};
}

Result<PropertyValue> ValueFromJson(const json& j, const std::string& where) {
  auto bad = [&where](std::string_view why) { return Error{fmt::format("{}: {}", where, why)}; };
  if (!j.is_array() || j.empty() || !j[0].is_string()) {
    return bad("expected [signature, value]");
  }
  PropertyValue value;
  value.signature = j[0].get<std::string>();
  if (j.size() == 1) return value;  // a type the reader keeps by signature only
  if (j.size() != 2) return bad("expected [signature, value]");
  const json& v = j[1];
  const std::string& sig = value.signature;
  if (sig == "s" || sig == "o" || sig == "ay") {
    if (!v.is_string()) return bad("expected a string");
    value.text = v.get<std::string>();
  } else if (sig == "t" || sig == "u") {
    if (!v.is_number_unsigned()) return bad("expected an unsigned number");
    value.unsigned_number = v.get<std::uint64_t>();
  } else if (sig == "x" || sig == "i") {
    if (!v.is_number_integer()) return bad("expected a number");
    value.number = v.get<std::int64_t>();
  } else if (sig == "b") {
    if (!v.is_boolean()) return bad("expected true or false");
    value.flag = v.get<bool>();
  } else if (sig == "as") {
    if (!v.is_array()) return bad("expected a list of strings");
    for (const auto& item : v) {
      if (!item.is_string()) return bad("expected a list of strings");
      value.texts.push_back(item.get<std::string>());
    }
  } else if (sig == "a(sst)" || sig == "a(stt)") {
    if (!v.is_array()) return bad("expected a list of triples");
    for (const auto& item : v) {
      if (!item.is_array() || item.size() != 3 || !item[0].is_string() ||
          !item[2].is_number_unsigned()) {
        return bad("expected [base, value, next] triples");
      }
      PropertyValue::Triple triple;
      triple.base = item[0].get<std::string>();
      triple.next = item[2].get<std::uint64_t>();
      if (sig == "a(sst)") {
        if (!item[1].is_string()) return bad("expected a calendar expression");
        triple.text = item[1].get<std::string>();
      } else {
        if (!item[1].is_number_unsigned()) return bad("expected a number of µs");
        triple.value = item[1].get<std::uint64_t>();
      }
      value.triples.push_back(std::move(triple));
    }
  } else {
    return bad(fmt::format("signature \"{}\" is not one the reader keeps", sig));
  }
  return value;
}

Result<PropertyBag> BagFromJson(const json& j, const std::string& where) {
  if (!j.is_object()) return Error{fmt::format("{}: expected an object", where)};
  PropertyBag bag;
  for (const auto& [name, item] : j.items()) {
    auto value = ValueFromJson(item, where + "." + name);
    if (!value) return Error{value.error()};
    bag.emplace(name, std::move(*value));
  }
  return bag;
}

Result<UnitReading> UnitFromJson(const json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) {
    return Error{fmt::format("{}: expected an object with a name", where)};
  }
  UnitReading unit;
  unit.name = j["name"].get<std::string>();
  for (const char* key : {"unit", "kind"}) {
    if (!j.contains(key)) continue;
    auto bag = BagFromJson(j[key], where + "." + key);
    if (!bag) return Error{bag.error()};
    (std::string_view(key) == "unit" ? unit.unit : unit.kind) = std::move(*bag);
  }
  return unit;
}

}  // namespace

json ToJson(const ManagerReading& reading) {
  json timers = json::array(), services = json::array();
  for (const auto& timer : reading.timers) timers.push_back(UnitToJson(timer));
  for (const auto& [name, service] : reading.services) services.push_back(UnitToJson(service));
  json out = {{"timers", timers}, {"services", services}, {"unit_path", reading.unit_path}};
  if (!reading.refused.empty()) out["refused"] = reading.refused;
  return out;
}

Result<ManagerReading> ManagerReadingFromJson(const json& j) {
  if (!j.is_object()) return Error{"a reading: expected an object"};
  ManagerReading reading;
  for (const char* key : {"timers", "services"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array()) return Error{fmt::format("{}: expected a list", key)};
    std::size_t index = 0;
    for (const auto& item : j[key]) {
      auto unit = UnitFromJson(item, fmt::format("{}[{}]", key, index++));
      if (!unit) return Error{unit.error()};
      if (std::string_view(key) == "timers") {
        reading.timers.push_back(std::move(*unit));
      } else {
        std::string name = unit->name;
        reading.services[name] = std::move(*unit);
      }
    }
  }
  if (j.contains("refused")) {
    if (!j["refused"].is_array()) return Error{"refused: expected a list"};
    for (const auto& item : j["refused"]) {
      if (!item.is_string()) return Error{"refused: expected a list of strings"};
      reading.refused.push_back(item.get<std::string>());
    }
  }
  if (j.contains("unit_path")) {
    if (!j["unit_path"].is_array()) return Error{"unit_path: expected a list"};
    for (const auto& item : j["unit_path"]) {
      if (!item.is_string()) return Error{"unit_path: expected a list of strings"};
      reading.unit_path.push_back(item.get<std::string>());
    }
  }
  return reading;
}

}  // namespace schedwatch::systemd
