// schedwatch_run's records as the exporter reads them: any bytes either parse into a record that
// renders and parses back the same, or are refused; summaries of what parsed never crash.
#include "fuzz/fuzz_util.h"
#include "sources/run_record.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  auto record = ParseRunRecord(fuzz::AsText(data, size));
  if (!record) return 0;
  auto again = ParseRunRecord(RenderRunRecord(*record));
  if (!again || again->role != record->role || again->state != record->state ||
      again->exit_code != record->exit_code || again->signal != record->signal) {
    __builtin_trap();  // a record we accept must survive our own round trip
  }
  std::vector<std::pair<std::string, RunRecord>> records = {{"a", *record}, {"b", *again}};
  SummarizeRunRecords(records);
  RunRecordFileName(*record);
  return 0;
}
