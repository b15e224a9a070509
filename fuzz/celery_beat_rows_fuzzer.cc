// django-celery-beat's rows as the celery_beat source reads them (one line a row, cells split by
// tabs, "\N" for NULL): each parsed into a task, a marked one made a live object, and all of them
// judged for beat being down, at a few instants.
#include <limits>

#include "fuzz/fuzz_util.h"
#include "sources/celery_beat/celery_beat_mapping.h"

namespace {

using namespace schedwatch;

celery_beat::Row SplitRow(std::string_view line) {
  celery_beat::Row row;
  while (true) {
    const std::size_t tab = line.find('\t');
    const std::string_view cell = line.substr(0, tab);
    if (cell == "\\N") {
      row.emplace_back();
    } else {
      row.emplace_back(std::string(cell));
    }
    if (tab == std::string_view::npos) break;
    line.remove_prefix(tab + 1);
  }
  return row;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::AsText(data, size);
  std::vector<celery_beat::Task> tasks;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    auto task = celery_beat::ParseTask(SplitRow(text.substr(0, newline)));
    if (task) tasks.push_back(std::move(*task));
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  for (std::int64_t now :
       {std::int64_t{1796040000}, std::int64_t{0}, std::numeric_limits<std::int64_t>::max() / 2}) {
    for (const auto& task : tasks) {
      if (task.marker && *task.marker) celery_beat::MakeLiveObject(task, **task.marker, now);
      celery_beat::LastRunHistory(task);
    }
    celery_beat::BeatDown(tasks, now, 300);
  }
  return 0;
}
