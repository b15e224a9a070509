// A job's progress checkpoint: whatever bytes the watched job writes.
#include "exporter/refresh/checkpoint.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto parsed = schedwatch::ParseCheckpoint(schedwatch::fuzz::AsText(data, size));
  // A time it accepts is within 1970..9999, as the classifier assumes.
  if (parsed && *parsed && (**parsed < 0 || **parsed > 253402300799)) __builtin_trap();
  return 0;
}
