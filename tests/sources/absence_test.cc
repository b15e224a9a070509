#include "sources/absence.h"

#include <gtest/gtest.h>

#include <deque>

namespace schedwatch {
namespace {

LiveObject Object(const std::string& id, const std::string& role) {
  LiveObject object;
  object.set_id(id);
  object.set_role(role);
  return object;
}

SourceSnapshot Holding(std::vector<LiveObject> objects) {
  SourceSnapshot snapshot;
  snapshot.objects = std::move(objects);
  return snapshot;
}

const std::vector<std::string> kRoles = {"gate", "retry", "report"};

TEST(AbsenceTest, RolesWithoutObject) {
  EXPECT_EQ(RolesWithoutObject(kRoles, {Object("a", "gate"), Object("b", "unowned")}),
            (std::set<std::string>{"report", "retry"}));
  EXPECT_TRUE(RolesWithoutObject({}, {}).empty());
  EXPECT_EQ(RolesWithoutObject({"gate"}, {}), (std::set<std::string>{"gate"}));
}

TEST(AbsenceTest, OneReadConfirmsNothing) {
  AbsenceReads reads = FirstRead(kRoles, Holding({Object("a", "gate")}));
  EXPECT_EQ(reads.absent_in_first_read, (std::set<std::string>{"report", "retry"}));
  EXPECT_TRUE(reads.confirmed_absent.empty());
  ASSERT_TRUE(reads.snapshot.ok());
  EXPECT_EQ(reads.reads, 1);
}

TEST(AbsenceTest, MissingOnlyWhenBothReadsLackTheRole) {
  AbsenceReads reads = FirstRead(kRoles, Holding({Object("a", "gate")}));
  FirstOfTwo(reads);
  // `retry` appeared in between: a race, not a deletion. `gate` went away: seen once only.
  SecondRead(reads, Holding({Object("b", "retry")}));
  EXPECT_EQ(reads.confirmed_absent, (std::set<std::string>{"report"}));
  EXPECT_EQ(reads.reads, 2);
  ASSERT_TRUE(reads.snapshot.ok());
  EXPECT_EQ(reads.snapshot->objects.size(), 1u);  // classified from the last read
}

TEST(AbsenceTest, AFailedReadConfirmsNothing) {
  AbsenceReads failed_first = FirstRead(kRoles, Error{"refused"});
  EXPECT_FALSE(failed_first.snapshot.ok());
  EXPECT_TRUE(failed_first.absent_in_first_read.empty());

  AbsenceReads reads = FirstRead(kRoles, Holding({}));
  FirstOfTwo(reads);
  SecondRead(reads, Error{"timeout"});
  EXPECT_FALSE(reads.snapshot.ok());
  EXPECT_TRUE(reads.confirmed_absent.empty());
}

TEST(AbsenceTest, RecoveredProblemsOfTheFirstReadAreKeptWhenASecondFollows) {
  SourceSnapshot first = Holding({});
  first.problems = {{"http_500", "retried", true}, {"malformed_object", "line 3", false}};
  AbsenceReads reads = FirstRead(kRoles, std::move(first));
  FirstOfTwo(reads);
  SecondRead(reads, Holding({}));
  ASSERT_EQ(reads.recovered_in_first_read.size(), 1u);
  EXPECT_EQ(reads.recovered_in_first_read[0].reason, "http_500");
}

// A source whose reads return the snapshots given, in order, and count the reads.
struct ScriptedReads {
  std::deque<Result<SourceSnapshot>> answers;
  int reads = 0;
  Result<SourceSnapshot> operator()() {
    ++reads;
    Result<SourceSnapshot> next = std::move(answers.front());
    answers.pop_front();
    return next;
  }
};

TEST(AbsenceTest, ConfirmAbsenceReadsAgainOnlyWhenARoleIsAbsent) {
  ScriptedReads all_there;
  all_there.answers.push_back(
      Holding({Object("a", "gate"), Object("b", "retry"), Object("c", "report")}));
  int waits = 0;
  auto wait = [&] { return ++waits > 0; };
  AbsenceReads reads = ConfirmAbsence(kRoles, std::ref(all_there), wait);
  EXPECT_EQ(all_there.reads, 1);
  EXPECT_EQ(waits, 0);
  EXPECT_TRUE(reads.confirmed_absent.empty());

  ScriptedReads one_gone;
  one_gone.answers.push_back(Holding({Object("a", "gate"), Object("b", "retry")}));
  one_gone.answers.push_back(Holding({Object("a", "gate"), Object("b", "retry")}));
  reads = ConfirmAbsence(kRoles, std::ref(one_gone), wait);
  EXPECT_EQ(one_gone.reads, 2);
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(reads.confirmed_absent, (std::set<std::string>{"report"}));
}

TEST(AbsenceTest, ACancelledWaitEndsWithoutASecondRead) {
  ScriptedReads reads_left;
  reads_left.answers.push_back(Holding({}));
  AbsenceReads reads = ConfirmAbsence(kRoles, std::ref(reads_left), [] { return false; });
  EXPECT_EQ(reads_left.reads, 1);
  ASSERT_FALSE(reads.snapshot.ok());
  EXPECT_EQ(reads.snapshot.error(), "cancelled");
  EXPECT_TRUE(reads.confirmed_absent.empty());
}

}  // namespace
}  // namespace schedwatch
