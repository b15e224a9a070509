# The systemd source: the mapping of unit properties, the markers and the journal's entries as
# pure functions on fixtures captured from a real systemd 252.
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/timer_mapping_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/unit_markers_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/unit_journal_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/masked_timer_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/unit_files_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/systemd_repairer_test.cc)

add_executable(systemd_capture ${CMAKE_CURRENT_LIST_DIR}/systemd_capture.cc)
target_link_libraries(systemd_capture PRIVATE schedwatch::sources)

# Against a real systemd booted in a Debian root with systemd-nspawn (needs root; the root is
# built once a day with mmdebstrap and reused, under /var/tmp).
schedwatch_script_test(NAME systemd_real_systemd LABELS needs-root peer TIMEOUT 600
  RESOURCE_LOCK nspawn
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/real_systemd_test.py --exporter ${EXPORTER}
          --capture $<TARGET_FILE:systemd_capture>)

# discover on the captured timers: the draft and report (golden), as the exporter prints them.
schedwatch_gtests(LIBRARY schedwatch::exporter LABELS unit SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/systemd_discover_test.cc)
