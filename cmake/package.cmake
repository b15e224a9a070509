# The Debian package, made by CPack from an already built tree (no second compile):
#   cmake --build build && (cd build && cpack)         -> build/packages/schedwatch_<v>-1_<arch>.deb
# Depends is computed by dpkg-shlibdeps from the binaries' shared libraries (libsystemd0 for the
# systemd source's sd-bus and sd-journal among them), plus adduser for the maintainer scripts. The version is project()'s; the Debian revision is CPACK_DEBIAN_PACKAGE_RELEASE.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME schedwatch)
set(CPACK_PACKAGE_VENDOR "the schedwatch authors")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Prometheus exporter that watches scheduled jobs from outside")
# CPack puts the summary first and indents each line of this text (an empty line becomes " .").
set(CPACK_PACKAGE_DESCRIPTION "schedwatch compares a versioned desired-state spec (which scheduled
jobs must exist, where, on which schedule) with each scheduler's live list and
run history: crontab, systemd timers, Kubernetes CronJobs, GitHub Actions and
snapshot files.
It serves what it sees as Prometheus metrics, so a job that was deleted,
suspended or stopped running is noticed, not only one that failed.

schedwatch_exporter serves the metrics; schedwatch_rulegen turns the same spec
into alerting rules, their promtool tests, an Alertmanager snippet and a
Grafana dashboard.")
set(CPACK_PACKAGE_CONTACT "schedwatch maintainers <schedwatch@users.noreply.github.com>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/schedwatch/schedwatch")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)

# Maintainer scripts (the system user, the unit's enablement) and the conffiles list.
set(conffiles ${CMAKE_BINARY_DIR}/packaging/conffiles)
file(WRITE ${conffiles} "${SCHEDWATCH_CONFIG_DIR}/spec.yaml
${SCHEDWATCH_CONFIG_DIR}/demo-live-state.yaml
${SCHEDWATCH_DEFAULTS_DIR}/schedwatch-exporter
")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${conffiles}
    ${CMAKE_SOURCE_DIR}/packaging/debian/postinst ${CMAKE_SOURCE_DIR}/packaging/debian/prerm
    ${CMAKE_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

# changelog.Debian.gz, which only the package has: written into CPack's staging tree.
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/debian_changelog.cmake)
set(CPACK_SCHEDWATCH_DOCDIR ${CMAKE_INSTALL_DOCDIR})

set(CPACK_SOURCE_GENERATOR TXZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git(/|$)" "/build[^/]*/" "/__pycache__/")
include(CPack)
