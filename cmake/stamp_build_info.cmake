# Writes build_info.cc with the revision and branch of the source tree as it is being built
# (run by the build at every invocation, not by configure, so the revision never goes stale).
# The file is rewritten only when its content changes, so an unchanged tree recompiles nothing.
# Input variables: SOURCE_DIR, OUTPUT, SCHEDWATCH_VERSION, SCHEDWATCH_COMPILER, SCHEDWATCH_PLATFORM.
# SCHEDWATCH_REVISION and SCHEDWATCH_BRANCH in the environment win (builds from a tarball).
set(SCHEDWATCH_REVISION "$ENV{SCHEDWATCH_REVISION}")
set(SCHEDWATCH_BRANCH "$ENV{SCHEDWATCH_BRANCH}")
if(NOT SCHEDWATCH_REVISION)
  execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE SCHEDWATCH_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(SCHEDWATCH_REVISION)
    execute_process(COMMAND git status --porcelain --untracked-files=no
                    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE changes ERROR_QUIET)
    if(changes)
      string(APPEND SCHEDWATCH_REVISION "-dirty")
    endif()
  else()
    set(SCHEDWATCH_REVISION unknown)
  endif()
endif()
if(NOT SCHEDWATCH_BRANCH)
  execute_process(COMMAND git rev-parse --abbrev-ref HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE SCHEDWATCH_BRANCH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT SCHEDWATCH_BRANCH)
    set(SCHEDWATCH_BRANCH unknown)
  endif()
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.cc.in ${OUTPUT} @ONLY)
