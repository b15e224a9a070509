# Install rules: `cmake --install build [--prefix P]` from source, and the Debian package
# (cmake/package.cmake installs the same rules with the prefix /usr). Laid out as Debian ships
# prometheus-node-exporter: binaries in P/bin, the unit in /lib/systemd/system, the spec in
# /etc/schedwatch (conffiles), the unit's ARGS in /etc/default/schedwatch-exporter.
include(GNUInstallDirs)
set(SCHEDWATCH_SYSTEMD_UNIT_DIR /lib/systemd/system CACHE PATH "Where the systemd unit goes")
set(SCHEDWATCH_CONFIG_DIR /etc/schedwatch CACHE PATH "Where the spec goes")
set(SCHEDWATCH_DEFAULTS_DIR /etc/default CACHE PATH "Where the unit's ARGS file goes")

set(SCHEDWATCH_BINARIES schedwatch_exporter schedwatch_rulegen schedwatch_run)
foreach(binary ${SCHEDWATCH_BINARIES})
  if(TARGET ${binary})
    # Full RELRO, as Debian's hardening flags link daemons (lintian: hardening-no-bindnow).
    target_link_options(${binary} PRIVATE LINKER:-z,relro,-z,now)
    install(TARGETS ${binary} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# The example unit names /usr/bin/schedwatch_exporter; the installed one names the binary of
# this installation's prefix, known only when installing (CPack installs with the prefix /usr).
set(unit_source ${CMAKE_SOURCE_DIR}/examples/schedwatch-exporter.service)
set(unit_target ${SCHEDWATCH_SYSTEMD_UNIT_DIR}/schedwatch-exporter.service)
install(CODE "
  file(READ \"${unit_source}\" unit)
  string(REPLACE \"/usr/bin/schedwatch_exporter\"
                 \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/schedwatch_exporter\" unit \"\${unit}\")
  message(STATUS \"Installing: \$ENV{DESTDIR}${unit_target}\")
  file(WRITE \"\$ENV{DESTDIR}${unit_target}\" \"\${unit}\")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\$ENV{DESTDIR}${unit_target}\")")

# Its socket unit (--web.systemd-socket), the same everywhere.
install(FILES examples/schedwatch-exporter.socket DESTINATION ${SCHEDWATCH_SYSTEMD_UNIT_DIR})

# The spec as installed watches a demo snapshot beside it, so the exporter serves without a
# scheduler; the ARGS file points the unit at it.
install(FILES packaging/spec.yaml DESTINATION ${SCHEDWATCH_CONFIG_DIR})
install(FILES examples/live-state.yaml DESTINATION ${SCHEDWATCH_CONFIG_DIR}
        RENAME demo-live-state.yaml)
install(FILES packaging/default DESTINATION ${SCHEDWATCH_DEFAULTS_DIR} RENAME schedwatch-exporter)

# Documentation. CHANGELOG.md is the upstream changelog, compressed as Debian names it.
install(FILES README.md SECURITY.md packaging/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(changelog_target ${CMAKE_INSTALL_DOCDIR}/changelog.gz)
install(CODE "
  set(changelog \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${changelog_target}\")
  message(STATUS \"Installing: \${changelog}\")
  execute_process(COMMAND gzip -9nc \"${CMAKE_SOURCE_DIR}/CHANGELOG.md\" OUTPUT_FILE \"\${changelog}\"
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR \"gzip failed for \${changelog}\")
  endif()
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${changelog}\")")
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# The reference pages beside README.md, so its docs/ links resolve in the installed copy too.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
install(FILES packaging/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME schedwatch)

# Manual pages from each binary's --help (help2man, when installed; the package test's lintian
# fails a package without them). The binaries run by name, so the pages do not show build paths.
find_program(HELP2MAN help2man)
if(HELP2MAN AND TARGET schedwatch_exporter AND TARGET schedwatch_rulegen AND TARGET schedwatch_run)
  foreach(binary ${SCHEDWATCH_BINARIES})
    if(binary STREQUAL schedwatch_exporter)
      set(summary "serve Prometheus metrics about scheduled jobs, check and reconcile a spec")
    elseif(binary STREQUAL schedwatch_run)
      set(summary "run a scheduled job under a per-role guard and record the run")
    else()
      set(summary "generate alerting rules, their tests and a dashboard from a spec")
    endif()
    install(CODE "
      set(page \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man1/${binary}.1\")
      file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man1\")
      message(STATUS \"Installing: \${page}.gz\")
      execute_process(COMMAND \${CMAKE_COMMAND} -E env \"PATH=$<TARGET_FILE_DIR:${binary}>:\$ENV{PATH}\"
                              ${HELP2MAN} --no-info --section=1 \"--name=${summary}\"
                              --version-string=${PROJECT_VERSION} -o \${page} ${binary}
                      RESULT_VARIABLE failed)
      if(NOT failed)
        execute_process(COMMAND gzip -9nf \${page} RESULT_VARIABLE failed)
      endif()
      if(failed)
        message(FATAL_ERROR \"help2man failed for ${binary}\")
      endif()
      list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${page}.gz\")")
  endforeach()
else()
  message(STATUS "help2man not found: no manual pages are installed")
endif()
