// The spec's jobs list decoded as it streams by: differential against the whole read. The items
// YamlDocument hands on are the whole tree's jobs (kind, position, size), and the shards of a
// spec, each keeping its own jobs, give the unsharded spec's error or, together, its jobs.
#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <utility>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "schedwatch/spec.h"
#include "schedwatch/yaml_tree.h"
#include "sources/catalog.h"

namespace {

using Shape = std::tuple<int, int, int, std::size_t>;

Shape ShapeOf(schedwatch::YamlNode node) {
  return {static_cast<int>(node.kind()), node.line(), node.column(), node.size()};
}

void Require(bool holds) {
  if (!holds) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  std::string_view text = fuzz::AsText(data, size);
  auto whole = YamlDocument::Parse(text);
  std::vector<Shape> streamed_items;
  std::vector<bool> streams;  // each list's answer: either is valid
  YamlDocument::StreamedList jobs{"jobs",
                                  [&](YamlNode before) {
                                    Require(before.IsMapping());
                                    streams.push_back(before.size() % 2 == 0);
                                    return streams.back();
                                  },
                                  [&](YamlNode item, std::size_t index) {
                                    Require(index == streamed_items.size());
                                    streamed_items.push_back(ShapeOf(item));
                                  }};
  auto streamed = YamlDocument::Parse(YamlDocument::TextReader(text), text.size(), jobs);
  Require(whole.ok() == streamed.ok());
  if (whole.ok()) {
    YamlNode root = whole->root();
    std::vector<Shape> expected;
    std::size_t lists = 0;
    for (std::size_t i = 0; root.IsMapping() && i < root.size(); ++i) {
      YamlNode key = root.key(i), list = root.value(i);
      // A list written here, not an alias to one written before.
      if (key.scalar() != "jobs" || !list.IsSequence() ||
          std::make_pair(list.line(), list.column()) <= std::make_pair(key.line(), key.column())) {
        continue;
      }
      Require(lists < streams.size());
      if (!streams[lists++]) continue;
      for (std::size_t j = 0; j < list.size(); ++j) expected.push_back(ShapeOf(list.item(j)));
    }
    Require(lists == streams.size() && expected == streamed_items);
  }

  auto spec = ParseSpec(text, "/fuzz/spec.yaml", BuiltInCatalog());
  std::vector<std::string> roles(spec.ok() ? spec->jobs.size() : 0);
  for (std::uint32_t k = 0; k < 2; ++k) {
    auto shard = ParseSpec(text, "/fuzz/spec.yaml", BuiltInCatalog(), ShardAssignment{k, 2});
    Require(shard.ok() == spec.ok());
    if (!spec.ok()) {
      Require(shard.error() == spec.error());
      continue;
    }
    Require(shard->SpecRoles() == spec->jobs.size());
    std::size_t next = 0;
    for (const JobSpec& job : shard->jobs) {
      while (next < spec->jobs.size() && spec->jobs[next].role != job.role) ++next;
      Require(next < spec->jobs.size() && ShardAssignment::Of(job.role, 2) == k);
      roles[next] = job.role;
    }
  }
  for (std::size_t i = 0; i < roles.size(); ++i) Require(roles[i] == spec->jobs[i].role);
  return 0;
}
