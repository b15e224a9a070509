// LiveObject keeps its seven texts in one buffer: each reads back as given, whatever its length,
// and equality sees every field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedwatch/classify.h"

namespace schedwatch {
namespace {

using Setter = void (LiveObject::*)(std::string_view);
using Getter = std::string_view (LiveObject::*)() const;
struct Field {
  const char* name;
  Getter get;
  Setter set;
};
const std::vector<Field> kFields = {
    {"id", &LiveObject::id, &LiveObject::set_id},
    {"role", &LiveObject::role, &LiveObject::set_role},
    {"schedule", &LiveObject::schedule, &LiveObject::set_schedule},
    {"timezone", &LiveObject::timezone, &LiveObject::set_timezone},
    {"spec_version", &LiveObject::spec_version, &LiveObject::set_spec_version},
    {"other_drift", &LiveObject::other_drift, &LiveObject::set_other_drift},
    {"state", &LiveObject::state, &LiveObject::set_state},
};

LiveObject Example() {
  LiveObject object("/etc/cron.d/app42:123", "retry", "*/10 * * * *", "Europe/Berlin", "7");
  object.set_other_drift("runs on ref main, the spec says release");
  object.set_state("disabled");
  return object;
}

TEST(LiveObject, ReadsBackWhatItWasGiven) {
  LiveObject object("/etc/cron.d/app42:123", "retry", "*/10 * * * *", "Europe/Berlin", "7", false);
  EXPECT_EQ(object.id(), "/etc/cron.d/app42:123");
  EXPECT_EQ(object.role(), "retry");
  EXPECT_EQ(object.schedule(), "*/10 * * * *");
  EXPECT_EQ(object.timezone(), "Europe/Berlin");
  EXPECT_EQ(object.spec_version(), "7");
  EXPECT_EQ(object.other_drift(), "");
  EXPECT_EQ(object.state(), "");
  EXPECT_FALSE(object.enabled);
  EXPECT_EQ(object.start_delay, 0);
  EXPECT_FALSE(object.next_start);

  LiveObject empty;
  for (const Field& field : kFields) EXPECT_EQ((empty.*field.get)(), "") << field.name;
  EXPECT_TRUE(empty.enabled);
}

TEST(LiveObject, ASetterChangesItsFieldOnly) {
  const LiveObject example = Example();
  for (const Field& changed : kFields) {
    for (std::string value : {"", "x", "a longer value than the small-string buffer holds"}) {
      LiveObject object = example;
      (object.*changed.set)(value);
      for (const Field& field : kFields) {
        EXPECT_EQ((object.*field.get)(), field.get == changed.get ? value : (example.*field.get)())
            << changed.name << " set to \"" << value << "\", " << field.name << " read";
      }
    }
  }
}

TEST(LiveObject, ASetterMayBeGivenAnotherOfItsFields) {
  LiveObject object = Example();
  object.set_role(object.id());
  object.set_id(object.schedule().substr(0, 4));
  EXPECT_EQ(object.role(), "/etc/cron.d/app42:123");
  EXPECT_EQ(object.id(), "*/10");
  EXPECT_EQ(object.schedule(), "*/10 * * * *");
}

TEST(LiveObject, EqualOnlyWhenEveryFieldIs) {
  const LiveObject example = Example();
  EXPECT_TRUE(example == Example());
  for (const Field& field : kFields) {
    LiveObject object = example;
    (object.*field.set)(std::string((example.*field.get)()) + "!");
    EXPECT_FALSE(object == example) << field.name;
  }
  // The same text, split between two fields another way.
  EXPECT_FALSE(LiveObject("ab", "c", "", "", "") == LiveObject("a", "bc", "", "", ""));
  LiveObject object = example;
  object.enabled = !object.enabled;
  EXPECT_FALSE(object == example) << "enabled";
  object = example;
  object.start_delay = 30;
  EXPECT_FALSE(object == example) << "start_delay";
  object = example;
  object.next_start = 1796040000;
  EXPECT_FALSE(object == example) << "next_start";
}

// 64 KiB is no limit: a CronJob may carry a text of any length up to etcd's 1.5 MiB.
TEST(LiveObject, FieldsLongerThan64KiBTogether) {
  // With "a:1", "r" and "stopped" (11 bytes): 65,535 bytes in all, one more, and far more.
  for (std::size_t size : {0xffffu - 11, 0xffffu - 10, 200000u}) {
    std::string schedule(size, '*');
    LiveObject object("a:1", "r", schedule, "", "");
    object.set_state("stopped");
    EXPECT_EQ(object.id(), "a:1") << size;
    EXPECT_EQ(object.role(), "r") << size;
    EXPECT_EQ(object.schedule(), schedule) << size;
    EXPECT_EQ(object.timezone(), "") << size;
    EXPECT_EQ(object.state(), "stopped") << size;
    // Built another way, the same fields are equal.
    LiveObject same("a:1", "r", "", "", "");
    same.set_state("stopped");
    same.set_schedule(schedule);
    EXPECT_TRUE(same == object) << size;
    same.set_timezone("UTC");
    EXPECT_FALSE(same == object) << size;
    // Short again.
    object.set_schedule("@daily");
    EXPECT_EQ(object.schedule(), "@daily") << size;
    EXPECT_EQ(object.state(), "stopped") << size;
    LiveObject short_again("a:1", "r", "@daily", "", "");
    short_again.set_state("stopped");
    EXPECT_TRUE(object == short_again) << size;
  }
}

}  // namespace
}  // namespace schedwatch
