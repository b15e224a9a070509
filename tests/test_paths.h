// Where the tests find the sources, their fixtures and the exporter: SCHEDWATCH_SOURCE_DIR and
// SCHEDWATCH_TEST_DIR name these arrays, defined in a file generated per build
// (tests/CMakeLists.txt). Absolute paths in -D flags would make every test object depend on where
// the clone is, and a second clone would compile all the tests again instead of taking them from
// ccache.
#pragma once

extern const char kSchedwatchSourceDir[];
extern const char kSchedwatchTestDir[];
extern const char kSchedwatchExporter[];  // the schedwatch_exporter binary of this build
