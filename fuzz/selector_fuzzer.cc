// PromQL instant-vector selectors, as a job's success_metric names them.
#include "fuzz/fuzz_util.h"
#include "schedwatch/selector.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  schedwatch::ParseSelector(schedwatch::fuzz::AsText(data, size));
  return 0;
}
