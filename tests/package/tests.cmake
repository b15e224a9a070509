# The Debian package on a fresh Debian 12 root (needs root and the Debian archive, ~3 minutes):
# label `package`; scripts/test leaves it out, .ci/run runs it after (ctest -L package).
schedwatch_script_test(NAME package_fresh_root LABELS package needs-root TIMEOUT 1500 SERIAL
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/package_test.py --source-dir ${CMAKE_SOURCE_DIR}
          --cpack-config ${CMAKE_BINARY_DIR}/CPackConfig.cmake --exporter ${EXPORTER}
          --version ${PROJECT_VERSION})

# The release files agree with project()'s version and with each other; `cmake --install` into
# a scratch DESTDIR (fast, no root needed).
schedwatch_script_test(NAME release_files LABELS integration
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/release_files_test.py --source-dir ${CMAKE_SOURCE_DIR}
          --version ${PROJECT_VERSION} --exporter ${EXPORTER} --build-dir ${CMAKE_BINARY_DIR})
