# The Debian package on a fresh Debian 12 root (needs root and the Debian archive, ~3 minutes):
# label `package`; scripts/test leaves it out, .ci/run runs it after (ctest -L package).
if(TARGET schedwatch_exporter AND TARGET schedwatch_rulegen)
  add_test(NAME package_fresh_root
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/package_test.py
                   --source-dir ${CMAKE_SOURCE_DIR} --cpack-config ${CMAKE_BINARY_DIR}/CPackConfig.cmake
                   --exporter $<TARGET_FILE:schedwatch_exporter> --version ${PROJECT_VERSION})
  set_tests_properties(package_fresh_root PROPERTIES LABELS package TIMEOUT 1500 RUN_SERIAL TRUE)
endif()

# The release files agree with project()'s version and with each other; `cmake --install` into
# a scratch DESTDIR (fast, no root needed).
if(TARGET schedwatch_exporter)
  add_test(NAME release_files
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/release_files_test.py
                   --source-dir ${CMAKE_SOURCE_DIR} --version ${PROJECT_VERSION}
                   --exporter $<TARGET_FILE:schedwatch_exporter> --build-dir ${CMAKE_BINARY_DIR})
endif()
