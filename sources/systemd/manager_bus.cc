#include "sources/systemd/manager_bus.h"

#include <fmt/format.h>
#include <systemd/sd-bus.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <set>

namespace schedwatch::systemd {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kDestination = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kManager = "org.freedesktop.systemd1.Manager";
constexpr const char* kProperties = "org.freedesktop.DBus.Properties";

std::string Why(int r, const sd_bus_error* error) {
  if (error != nullptr && sd_bus_error_is_set(error)) {
    return fmt::format("{}: {}", error->name != nullptr ? error->name : "error",
                       error->message != nullptr ? error->message : "");
  }
  return std::strerror(-r);
}

struct BusDeleter {
  void operator()(sd_bus* bus) const { sd_bus_flush_close_unref(bus); }
};
struct MessageDeleter {
  void operator()(sd_bus_message* m) const { sd_bus_message_unref(m); }
};
using BusPtr = std::unique_ptr<sd_bus, BusDeleter>;
using MessagePtr = std::unique_ptr<sd_bus_message, MessageDeleter>;

class ScopedError {
 public:
  ScopedError() = default;
  ~ScopedError() { sd_bus_error_free(&error_); }
  sd_bus_error* get() { return &error_; }

 private:
  sd_bus_error error_ = SD_BUS_ERROR_NULL;
};

Result<BusPtr> Connect(const std::string& address) {
  sd_bus* raw = nullptr;
  int r;
  if (address.empty()) {
    r = sd_bus_open_system(&raw);
  } else {
    r = sd_bus_new(&raw);
    if (r >= 0) r = sd_bus_set_address(raw, address.c_str());
    if (r >= 0) r = sd_bus_set_bus_client(raw, 1);
    if (r >= 0) r = sd_bus_start(raw);
  }
  BusPtr bus(raw);
  if (r < 0) {
    return Error{fmt::format("cannot connect to {}: {}",
                             address.empty() ? "the system bus" : address, std::strerror(-r))};
  }
  return bus;
}

// Reads one value of signature `sig` (the variant is entered) into `value`; skips others.
int ReadValue(sd_bus_message* m, const char* sig, PropertyValue& value) {
  value.signature = sig;
  std::string_view s(sig);
  int r;
  if (s == "s" || s == "o") {
    const char* text = nullptr;
    r = sd_bus_message_read_basic(m, sig[0], &text);
    if (r >= 0 && text != nullptr) value.text = text;
    return r;
  }
  if (s == "t") return sd_bus_message_read_basic(m, 't', &value.unsigned_number);
  if (s == "u") {
    uint32_t u = 0;
    r = sd_bus_message_read_basic(m, 'u', &u);
    value.unsigned_number = u;
    return r;
  }
  if (s == "x") return sd_bus_message_read_basic(m, 'x', &value.number);
  if (s == "i") {
    int32_t i = 0;
    r = sd_bus_message_read_basic(m, 'i', &i);
    value.number = i;
    return r;
  }
  if (s == "b") {
    int b = 0;
    r = sd_bus_message_read_basic(m, 'b', &b);
    value.flag = b != 0;
    return r;
  }
  if (s == "as") {
    char** strv = nullptr;
    r = sd_bus_message_read_strv(m, &strv);
    if (r < 0) return r;
    for (char** p = strv; p != nullptr && *p != nullptr; ++p) {
      value.texts.emplace_back(*p);
      free(*p);
    }
    free(strv);
    return r;
  }
  if (s == "ay") {  // InvocationID: 16 bytes, kept as hex
    const void* bytes = nullptr;
    size_t size = 0;
    r = sd_bus_message_read_array(m, 'y', &bytes, &size);
    if (r < 0) return r;
    for (size_t i = 0; i < size; ++i) {
      value.text += fmt::format("{:02x}", static_cast<const unsigned char*>(bytes)[i]);
    }
    return r;
  }
  if (s == "a(sst)" || s == "a(stt)") {
    bool calendar = s == "a(sst)";
    r = sd_bus_message_enter_container(m, 'a', calendar ? "(sst)" : "(stt)");
    if (r < 0) return r;
    for (;;) {
      const char* base = nullptr;
      PropertyValue::Triple triple;
      if (calendar) {
        const char* expression = nullptr;
        r = sd_bus_message_read(m, "(sst)", &base, &expression, &triple.next);
        if (r > 0 && expression != nullptr) triple.text = expression;
      } else {
        r = sd_bus_message_read(m, "(stt)", &base, &triple.value, &triple.next);
      }
      if (r < 0) return r;
      if (r == 0) break;
      if (base != nullptr) triple.base = base;
      value.triples.push_back(std::move(triple));
    }
    return sd_bus_message_exit_container(m);
  }
  value.signature = sig;  // kept by signature only
  return sd_bus_message_skip(m, sig);
}

// Properties.GetAll(interface) into a bag. `refused` is set when the manager answered with an
// error (this unit only), not when no answer came.
Result<PropertyBag> GetAll(sd_bus* bus, const std::string& path, const char* interface,
                           bool* refused = nullptr) {
  ScopedError error;
  sd_bus_message* raw = nullptr;
  int r = sd_bus_call_method(bus, kDestination, path.c_str(), kProperties, "GetAll", error.get(),
                             &raw, "s", interface);
  MessagePtr reply(raw);
  if (r < 0) {
    if (refused != nullptr) *refused = sd_bus_error_is_set(error.get()) && r != -ETIMEDOUT;
    return Error{fmt::format("GetAll {} on {}: {}", interface, path, Why(r, error.get()))};
  }
  PropertyBag bag;
  r = sd_bus_message_enter_container(raw, 'a', "{sv}");
  while (r >= 0) {
    r = sd_bus_message_enter_container(raw, 'e', "sv");
    if (r <= 0) break;
    const char* name = nullptr;
    r = sd_bus_message_read_basic(raw, 's', &name);
    if (r < 0) break;
    const char* contents = nullptr;
    r = sd_bus_message_peek_type(raw, nullptr, &contents);
    if (r < 0 || contents == nullptr) break;
    std::string sig = contents;
    r = sd_bus_message_enter_container(raw, 'v', sig.c_str());
    if (r < 0) break;
    PropertyValue value;
    r = ReadValue(raw, sig.c_str(), value);
    if (r < 0) break;
    r = sd_bus_message_exit_container(raw);  // v
    if (r < 0) break;
    r = sd_bus_message_exit_container(raw);  // e
    if (name != nullptr) bag[name] = std::move(value);
  }
  if (r < 0) {
    return Error{
        fmt::format("GetAll {} on {}: unreadable answer: {}", interface, path, std::strerror(-r))};
  }
  return bag;
}

std::string UnitPath(const std::string& name) {
  char* path = nullptr;
  if (sd_bus_path_encode("/org/freedesktop/systemd1/unit", name.c_str(), &path) < 0) return "";
  std::string out = path;
  free(path);
  return out;
}

class Deadline {
 public:
  Deadline(std::chrono::milliseconds total, const std::atomic<bool>* cancelled)
      : end_(Clock::now() + total), cancelled_(cancelled) {}
  // Sets the bus's call timeout to what is left; an Error when nothing is.
  Result<bool> Arm(sd_bus* bus) const {
    if (cancelled_ != nullptr && cancelled_->load()) return Error{"cancelled"};
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(end_ - Clock::now());
    if (left.count() <= 0) return Error{"timed out reading the manager"};
    sd_bus_set_method_call_timeout(bus, static_cast<uint64_t>(left.count()));
    return true;
  }

 private:
  Clock::time_point end_;
  const std::atomic<bool>* cancelled_;
};

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A unit's properties: its Unit interface and its type's (`kind`, if any). nullopt when the
// manager refused (this unit is a problem, the rest is read); an Error when no answer came.
Result<std::optional<UnitReading>> ReadUnit(sd_bus* bus, const Deadline& deadline,
                                            const std::string& name, const char* kind,
                                            ManagerReading& reading) {
  std::string path = UnitPath(name);
  if (path.empty()) return std::optional<UnitReading>();
  UnitReading unit;
  unit.name = name;
  for (const char* interface : {"org.freedesktop.systemd1.Unit", kind}) {
    if (interface == nullptr) continue;
    if (auto armed = deadline.Arm(bus); !armed) return Error{armed.error()};
    bool refused = false;
    auto bag = GetAll(bus, path, interface, &refused);
    if (!bag && !refused) return Error{bag.error()};
    if (!bag) {
      reading.refused.push_back(bag.error());
      return std::optional<UnitReading>();
    }
    (interface == kind ? unit.kind : unit.unit) = std::move(*bag);
  }
  return std::optional<UnitReading>(std::move(unit));
}

}  // namespace

Result<ManagerReading> ReadManager(const BusOptions& options) {
  Deadline deadline(options.timeout, options.cancelled);
  auto bus = Connect(options.address);
  if (!bus) return Error{bus.error()};
  sd_bus* b = bus->get();
  ManagerReading reading;
  std::set<std::string> names;

  if (auto armed = deadline.Arm(b); !armed) return Error{armed.error()};
  {
    ScopedError error;
    sd_bus_message* raw = nullptr;
    int r = sd_bus_call_method(b, kDestination, kManagerPath, kManager, "ListUnitsByPatterns",
                               error.get(), &raw, "asas", 0, 1, "*.timer");
    MessagePtr reply(raw);
    if (r < 0) return Error{fmt::format("ListUnitsByPatterns: {}", Why(r, error.get()))};
    r = sd_bus_message_enter_container(raw, 'a', "(ssssssouso)");
    while (r >= 0) {
      const char *name = nullptr, *skip = nullptr, *object = nullptr;
      uint32_t job = 0;
      r = sd_bus_message_read(raw, "(ssssssouso)", &name, &skip, &skip, &skip, &skip, &skip,
                              &object, &job, &skip, &skip);
      if (r <= 0) break;
      if (name != nullptr && EndsWith(name, ".timer")) names.insert(name);
      if (names.size() > options.max_timers) break;
    }
    if (r < 0) return Error{fmt::format("ListUnitsByPatterns: unreadable answer")};
  }
  if (auto armed = deadline.Arm(b); !armed) return Error{armed.error()};
  {
    ScopedError error;
    sd_bus_message* raw = nullptr;
    int r = sd_bus_call_method(b, kDestination, kManagerPath, kManager, "ListUnitFilesByPatterns",
                               error.get(), &raw, "asas", 0, 1, "*.timer");
    MessagePtr reply(raw);
    if (r < 0) return Error{fmt::format("ListUnitFilesByPatterns: {}", Why(r, error.get()))};
    r = sd_bus_message_enter_container(raw, 'a', "(ss)");
    while (r >= 0) {
      const char *path = nullptr, *state = nullptr;
      r = sd_bus_message_read(raw, "(ss)", &path, &state);
      if (r <= 0) break;
      if (path == nullptr) continue;
      std::string_view p(path);
      auto slash = p.rfind('/');
      std::string name(slash == std::string_view::npos ? p : p.substr(slash + 1));
      // A template (name@.timer) is no unit until instantiated; its instances are listed.
      if (EndsWith(name, ".timer") && !EndsWith(name, "@.timer")) names.insert(name);
      if (names.size() > options.max_timers) break;
    }
    if (r < 0) return Error{"ListUnitFilesByPatterns: unreadable answer"};
  }
  if (names.size() > options.max_timers) {
    return Error{fmt::format("more than {} timer units", options.max_timers)};
  }
  if (auto armed = deadline.Arm(b); !armed) return Error{armed.error()};
  {
    auto manager = GetAll(b, kManagerPath, kManager);
    if (!manager) return Error{manager.error()};
    auto it = manager->find("UnitPath");
    if (it != manager->end()) reading.unit_path = it->second.texts;
  }

  std::set<std::string> services;
  for (const auto& name : names) {
    auto timer = ReadUnit(b, deadline, name, "org.freedesktop.systemd1.Timer", reading);
    if (!timer) return Error{timer.error()};
    if (!*timer) continue;
    auto activates = (*timer)->kind.find("Unit");
    if (activates != (*timer)->kind.end() && activates->second.signature == "s" &&
        !activates->second.text.empty()) {
      services.insert(activates->second.text);
    }
    reading.timers.push_back(std::move(**timer));
  }
  for (const auto& name : services) {
    const char* kind = EndsWith(name, ".service") ? "org.freedesktop.systemd1.Service" : nullptr;
    auto service = ReadUnit(b, deadline, name, kind, reading);
    if (!service) return Error{service.error()};
    if (*service) reading.services[name] = std::move(**service);
  }
  return reading;
}

Result<ManagerConnection> ManagerConnection::Open(const std::string& address,
                                                  std::chrono::milliseconds call_timeout) {
  auto bus = Connect(address);
  if (!bus) return Error{bus.error()};
  sd_bus_set_method_call_timeout(bus->get(), static_cast<uint64_t>(call_timeout.count()) * 1000u);
  return ManagerConnection(bus->release());
}

ManagerConnection::ManagerConnection(ManagerConnection&& other) noexcept : bus_(other.bus_) {
  other.bus_ = nullptr;
}

ManagerConnection::~ManagerConnection() {
  if (bus_ != nullptr) sd_bus_flush_close_unref(static_cast<sd_bus*>(bus_));
}

Result<bool> ManagerConnection::Reload() {
  ScopedError error;
  int r = sd_bus_call_method(static_cast<sd_bus*>(bus_), kDestination, kManagerPath, kManager,
                             "Reload", error.get(), nullptr, "");
  if (r < 0) return Error{fmt::format("daemon-reload: {}", Why(r, error.get()))};
  return true;
}

Result<bool> ManagerConnection::EnableUnitFiles(const std::string& unit) {
  ScopedError error;
  int r =
      sd_bus_call_method(static_cast<sd_bus*>(bus_), kDestination, kManagerPath, kManager,
                         "EnableUnitFiles", error.get(), nullptr, "asbb", 1, unit.c_str(), 0, 0);
  if (r < 0) return Error{fmt::format("enable {}: {}", unit, Why(r, error.get()))};
  return true;
}

Result<bool> ManagerConnection::StartUnit(const std::string& unit) {
  ScopedError error;
  int r = sd_bus_call_method(static_cast<sd_bus*>(bus_), kDestination, kManagerPath, kManager,
                             "StartUnit", error.get(), nullptr, "ss", unit.c_str(), "replace");
  if (r < 0) return Error{fmt::format("start {}: {}", unit, Why(r, error.get()))};
  return true;
}

}  // namespace schedwatch::systemd
