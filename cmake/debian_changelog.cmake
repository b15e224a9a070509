# CPACK_PRE_BUILD_SCRIPTS: writes usr/share/doc/schedwatch/changelog.Debian.gz into the staging
# tree of the Debian package. The entry's date honours SOURCE_DATE_EPOCH (reproducible builds).
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()  # the source tarball (package_source) has no Debian files
endif()
set(version "${CPACK_PACKAGE_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
string(TIMESTAMP date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(doc_dir "${CPACK_TEMPORARY_INSTALL_DIRECTORY}${CPACK_PACKAGING_INSTALL_PREFIX}/${CPACK_SCHEDWATCH_DOCDIR}")
if(NOT IS_DIRECTORY "${doc_dir}")
  message(FATAL_ERROR "no ${doc_dir} in the package's staging tree")
endif()
file(WRITE "${doc_dir}/changelog.Debian" "${CPACK_PACKAGE_NAME} (${version}) unstable; urgency=medium

  * Built with CPack from the upstream tree; changelog.gz says what changed.

 -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${date}
")
execute_process(COMMAND gzip -9nf "${doc_dir}/changelog.Debian" RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "gzip failed for ${doc_dir}/changelog.Debian")
endif()
