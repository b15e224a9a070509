// List pages read as they stream (PageStream): whatever pieces a page arrives in, the result is
// the whole-page parse's; a page that is not a list, truncated or too large is a failed read.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "sources/kubernetes/kube_objects.h"
#include "tests/test_util.h"

namespace schedwatch::kubernetes {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(SCHEDWATCH_TEST_DIR) / "sources/kubernetes/fixtures";

std::string Fixture(const std::string& name) { return testing::ReadFile(kFixtures / name); }

std::string Render(const Mapped<CronJob>& mapped) {
  std::string text = "key=" + mapped.key;
  if (mapped.value) {
    const CronJob& c = *mapped.value;
    text += fmt::format(
        " uid={} id={} role={} schedule={} tz={} version={} enabled={} last={} success={}", c.uid,
        c.object.id(), c.object.role(), c.object.schedule(), c.object.timezone(),
        c.object.spec_version(), static_cast<int>(c.object.enabled), c.last_schedule.value_or(-1),
        c.last_successful.value_or(-1));
    for (const auto& uid : c.active_job_uids) text += " active=" + uid;
  }
  if (mapped.problem) text += " problem=" + mapped.problem->reason + ":" + mapped.problem->message;
  return text;
}

std::string Render(const Mapped<Job>& mapped) {
  std::string text = "key=" + mapped.key + " owner=" + mapped.owner;
  if (mapped.value) {
    const Job& j = *mapped.value;
    text += " uid=" + j.uid + " owner_uid=" + j.owner_uid + " index=" + std::to_string(j.owner) +
            " state=" + std::to_string(static_cast<int>(j.state)) + " reason=" + j.reason +
            " started=" + std::to_string(j.started) +
            " finished=" + std::to_string(j.finished.value_or(-1));
  }
  if (mapped.problem) text += " problem=" + mapped.problem->reason + ":" + mapped.problem->message;
  return text;
}

// A page's result as text: "error" when it failed, else its members and every item handed over.
template <typename T>
std::string Render(bool ok, const std::string& token, const std::string& version,
                   std::size_t listed, const std::vector<std::string>& items) {
  if (!ok) return "error";
  std::string text =
      "continue=" + token + " version=" + version + " listed=" + std::to_string(listed) + "\n";
  for (const auto& item : items) text += item + "\n";
  return text;
}

enum class Kind { kCronJobs, kJobs, kOwnedJobs };

const std::unordered_map<std::string, std::size_t>& Owners() {
  static const std::unordered_map<std::string, std::size_t> owners = {
      {"5b1c2a9e-0001-4c61-9a0e-2f7b8c1d4e01", 0}, {"9d7e4410-0002-4f0b-8c55-71aa30c2b9e7", 1}};
  return owners;
}

std::string Whole(Kind kind, std::string_view body) {
  std::vector<std::string> items;
  if (kind == Kind::kCronJobs) {
    auto page = ReadCronJobList(body, [&](Mapped<CronJob> m) { items.push_back(Render(m)); });
    return page ? Render<CronJob>(true, page->continue_token, page->resource_version, page->listed,
                                  items)
                : "error";
  }
  // The Job pages as the whole-page parse reads them, through ParseJobList for owners.
  if (kind == Kind::kOwnedJobs) {
    auto page = ReadOwnedJobList(body, [&](Mapped<Job> m) { items.push_back(Render(m)); });
    return page ? Render<Job>(true, page->continue_token, page->resource_version, page->listed,
                              items)
                : "error";
  }
  auto page = ParseJobList(body, Owners());
  if (!page) return "error";
  // ParseJobList keeps only values and problems; the stream's handler is compared the same way.
  for (const auto& job : page->items) {
    Mapped<Job> m{"", job, std::nullopt, ""};
    items.push_back(Render(m));
  }
  for (const auto& problem : page->problems) {
    Mapped<Job> m{"", std::nullopt, problem, ""};
    items.push_back(Render(m));
  }
  return Render<Job>(true, page->continue_token, page->resource_version, page->listed, items);
}

// ParseJobList keeps only values and problems (values first): the stream's Jobs are compared
// the same way, without their keys.
struct Collected {
  std::vector<std::string> items, job_problems;
  std::vector<std::string> All() const {
    std::vector<std::string> all = items;
    all.insert(all.end(), job_problems.begin(), job_problems.end());
    return all;
  }
};

PageStream Start(Kind kind, Collected& out, PageStream::Limits limits) {
  if (kind == Kind::kCronJobs) {
    return StreamCronJobList([&](Mapped<CronJob> m) { out.items.push_back(Render(m)); }, limits);
  }
  if (kind == Kind::kOwnedJobs) {
    return StreamOwnedJobList([&](Mapped<Job> m) { out.items.push_back(Render(m)); }, limits);
  }
  return StreamJobList(
      Owners(),
      [&](Mapped<Job> m) {
        if (m.value) out.items.push_back(Render(Mapped<Job>{"", m.value, std::nullopt, ""}));
        if (m.problem) {
          out.job_problems.push_back(Render(Mapped<Job>{"", std::nullopt, m.problem, ""}));
        }
      },
      limits);
}

// `body` fed in the pieces `cuts` (ascending offsets) make.
std::string Streamed(Kind kind, std::string_view body, const std::vector<std::size_t>& cuts,
                     PageStream::Limits limits = {}) {
  Collected out;
  PageStream stream = Start(kind, out, limits);
  std::size_t at = 0;
  bool going = true;
  for (std::size_t cut : cuts) {
    if (!(going = stream.Feed(body.substr(at, cut - at)))) break;
    at = cut;
  }
  if (going && at < body.size()) stream.Feed(body.substr(at));
  auto end = stream.Finish();
  if (!end) return "error";
  return Render<CronJob>(true, end->continue_token, end->resource_version, end->listed, out.All());
}

void ExpectEveryCutAgrees(Kind kind, const std::string& body) {
  const std::string whole = Whole(kind, body);
  ASSERT_EQ(Streamed(kind, body, {}), whole);
  // Two pieces, cut at every byte.
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    ASSERT_EQ(Streamed(kind, body, {cut}), whole) << "cut at " << cut;
  }
  // One byte at a time.
  std::vector<std::size_t> bytes;
  for (std::size_t cut = 1; cut < body.size(); ++cut) bytes.push_back(cut);
  ASSERT_EQ(Streamed(kind, body, bytes), whole);
  // Many random cuts.
  std::mt19937 random(23);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::size_t> cuts;
    std::uniform_int_distribution<std::size_t> at(0, body.size());
    for (int i = 0, n = static_cast<int>(random() % 40); i < n; ++i) cuts.push_back(at(random));
    std::sort(cuts.begin(), cuts.end());
    ASSERT_EQ(Streamed(kind, body, cuts), whole) << "round " << round;
  }
}

TEST(KubePageStreamTest, FixturesCutAnywhereParseAsTheWholePage) {
  ExpectEveryCutAgrees(Kind::kCronJobs, Fixture("cronjob-list.json"));
  ExpectEveryCutAgrees(Kind::kCronJobs, Fixture("cronjob-list-reference-sample.json"));
  ExpectEveryCutAgrees(Kind::kJobs, Fixture("job-list.json"));
  ExpectEveryCutAgrees(Kind::kOwnedJobs, Fixture("job-list.json"));
  EXPECT_NE(Whole(Kind::kCronJobs, Fixture("cronjob-list.json")), "error");
  EXPECT_NE(Whole(Kind::kOwnedJobs, Fixture("job-list.json")), "error");
}

TEST(KubePageStreamTest, EveryTruncationIsAFailedReadAsForTheWholePage) {
  const std::string body = Fixture("cronjob-list.json");
  std::size_t end = body.find_last_not_of(" \t\r\n") + 1;
  for (std::size_t size = 0; size < end; ++size) {
    std::string_view truncated = std::string_view(body).substr(0, size);
    ASSERT_EQ(Whole(Kind::kCronJobs, truncated), "error") << size;
    ASSERT_EQ(Streamed(Kind::kCronJobs, truncated, {size / 2}), "error") << size;
  }
}

TEST(KubePageStreamTest, HostilePagesReadAsTheWholePage) {
  const std::string item =
      R"({"metadata":{"name":"a","namespace":"ops","uid":"u1",)"
      R"("labels":{"schedwatch.io/role":"backup"}},"spec":{"schedule":"0 3 * * *"}})";
  const std::vector<std::string> pages = {
      R"({"kind":"CronJobList","metadata":{"resourceVersion":"7","continue":"c"},"items":[)" +
          item + "," + item + "]}",
      R"({"items":[)" + item + R"(],"metadata":{"continue":"after"}})",
      R"({"it\u0065ms":[)" + item + "]}",
      R"({"items":[)" + item + R"(],"items":[)" + item + ",1]}",
      R"({"items":[)" + item + R"(],"items":null})",
      R"({"items":null,"items":[)" + item + "]}",
      R"({"items":[{"metadata":{"name":"]},{\"\\"}}]})",
      R"({"metadata":{"items":[1,2]},"items":[]})",
      R"({"metadata":{"continue":"a\"items\":[1]"},"items":[ ]})",
      "\xEF\xBB\xBF{\"items\":[]}",
      "{\"items\":[\xEF\xBB\xBF{}]}",
      "{\"items\":[ \xEF\xBB\xBF{}]}",
      R"({"items":[1,]})",
      R"({"items":[,1]})",
      R"({"items":[,]})",
      R"({"items":[1 2]})",
      R"({"items":[1}]})",
      R"({"items":[1]]})",
      R"({"items":[{]})",
      R"({"items":[[1,2],{"a":[}]})",
      R"({"items":[1]} {"items":[2]})",
      R"({} {"items":[2]})",
      R"([{"items":[1]}])",
      R"({"items":{"a":[1]}})",
      R"({"items":"[1]"})",
      R"({"items" "x":[1]})",
      R"({"items":[1],})",
      R"({"a":1 "items":[1]})",
      R"({"items":[1,"x",null,true,-0.5e3,[],{}]})",
      // An item past the value bounds (40 deep in a member kept whole) is a problem.
      R"({"items":[{"metadata":{"name":"d","namespace":"ops","uid":"u2",)"
      R"("labels":{"schedwatch.io/role":"deep"}},"spec":{"schedule":)" +
          std::string(40, '[') + std::string(40, ']') + "}}," + item + "]}",
      R"({"items":["\u00"]})",
      "{\"items\":[\"\xFF\"]}",
      R"({"items":[1])",
      R"({"items":[1)",
      R"({"items":["a)",
      R"({"items":[)",
      R"({"items")",
      "",
      " ",
      "{\"items\":[]}\n",
  };
  for (const auto& page : pages) {
    for (Kind kind : {Kind::kCronJobs, Kind::kOwnedJobs}) {
      const std::string whole = Whole(kind, page);
      for (std::size_t cut = 0; cut <= page.size(); ++cut) {
        ASSERT_EQ(Streamed(kind, page, {cut}), whole) << page << " cut at " << cut;
      }
      std::vector<std::size_t> bytes;
      for (std::size_t cut = 1; cut < page.size(); ++cut) bytes.push_back(cut);
      ASSERT_EQ(Streamed(kind, page, bytes), whole) << page;
    }
  }
  // What the cases prove: some read, some fail.
  EXPECT_NE(Whole(Kind::kCronJobs, pages[2]), "error");
  EXPECT_EQ(Whole(Kind::kCronJobs, pages[12]), "error");
}

TEST(KubePageStreamTest, AnItemOrARestPastItsLimitIsAFailedRead) {
  PageStream::Limits limits;
  limits.max_item_bytes = 64;
  limits.max_rest_bytes = 64;
  std::string big_item = R"({"metadata":{"name":")" + std::string(100, 'x') + R"("}})";
  EXPECT_NE(Streamed(Kind::kCronJobs, R"({"items":[)" + big_item + "]}", {}), "error");
  EXPECT_EQ(Streamed(Kind::kCronJobs, R"({"items":[)" + big_item + "]}", {}, limits), "error");
  std::string big_rest =
      R"({"metadata":{"continue":")" + std::string(100, 'x') + R"("},"items":[]})";
  EXPECT_NE(Streamed(Kind::kCronJobs, big_rest, {}), "error");
  EXPECT_EQ(Streamed(Kind::kCronJobs, big_rest, {}, limits), "error");
  // Many small items are no large rest and no large item.
  std::string many = R"({"items":[)";
  for (int i = 0; i < 1000; ++i) many += std::string(i ? "," : "") + R"({"metadata":{"name":"n"}})";
  many += "]}";
  EXPECT_NE(Streamed(Kind::kCronJobs, many, {}, limits), "error");
}

TEST(KubePageStreamTest, FeedSaysStopOnceThePageIsMalformed) {
  Collected out;
  PageStream stream = Start(Kind::kCronJobs, out, {});
  EXPECT_TRUE(stream.Feed(R"({"items":[{"metadata":{"name":"a"}},)"));
  EXPECT_EQ(out.items.size(), 1u);
  EXPECT_FALSE(stream.Feed(R"(oops,)"));
  EXPECT_FALSE(stream.Feed(R"({}]})"));
  auto end = stream.Finish();
  ASSERT_FALSE(end);
  EXPECT_EQ(end.error().rfind("malformed JSON in a CronJobList: item 1: ", 0), 0u) << end.error();
}

}  // namespace
}  // namespace schedwatch::kubernetes
