# The Debian package, built by scripts/package.sh with CPack's DEB generator (configure with
# -DWAITROOM_PACKAGE=ON): waitroomd_<version>_amd64.deb with
#   /usr/bin/waitroomd, the man page (src/CMakeLists.txt installs both),
#   /etc/waitroomd/waitroom.yaml (a conffile, deploy/debian/waitroom.yaml),
#   /usr/share/waitroomd/templates/ (the built-in pages, to start a custom_page_html from),
#   /usr/lib/systemd/system/waitroomd.service (deploy/waitroomd.service with the package's paths),
#   maintainer scripts (deploy/debian/): the waitroomd system user, /var/lib/waitroomd and a
#   generated cookie key (0600, owned by that user); a purge removes all three.
# The runtime dependencies come from dpkg-shlibdeps (Debian's dpkg-dev).

set(_deb ${PROJECT_SOURCE_DIR}/deploy/debian)

# The package's unit is the one of the sources with the package's binary, folders and user, so
# that the hardening is written once. Each replacement must hit: a changed unit stops the build.
file(READ ${PROJECT_SOURCE_DIR}/deploy/waitroomd.service _unit)
string(REGEX REPLACE "^(#[^\n]*\n)+"
  "# waitroomd Debian package: edit /etc/waitroomd/waitroom.yaml, then\n#   systemctl enable --now waitroomd\n"
  _unit "${_unit}")
foreach(_pair IN ITEMS
    "Documentation=file:///usr/local/share/doc/waitroom/README.md|Documentation=man:waitroomd(8)"
    "/usr/local/bin/waitroomd|/usr/bin/waitroomd"
    "/etc/waitroom/|/etc/waitroomd/"
    "/var/lib/waitroom\n|/var/lib/waitroomd\n"
    "User=waitroom\n|User=waitroomd\n"
    "Group=waitroom\n|Group=waitroomd\n"
    "StateDirectory=waitroom\n|StateDirectory=waitroomd\n")
  string(REPLACE "|" ";" _pair "${_pair}")
  list(GET _pair 0 _from)
  list(GET _pair 1 _to)
  string(FIND "${_unit}" "${_from}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "deploy/waitroomd.service no longer contains '${_from}': "
                        "update cmake/package.cmake")
  endif()
  string(REPLACE "${_from}" "${_to}" _unit "${_unit}")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/package/waitroomd.service "${_unit}")

install(FILES ${_deb}/waitroom.yaml DESTINATION /etc/waitroomd)
install(FILES ${CMAKE_BINARY_DIR}/package/waitroomd.service DESTINATION lib/systemd/system)
file(GLOB _templates ${PROJECT_SOURCE_DIR}/templates/*.html)
install(FILES ${_templates} DESTINATION ${CMAKE_INSTALL_DATADIR}/waitroomd/templates)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME waitroomd)
set(CPACK_PACKAGE_VENDOR "waitroom")
set(CPACK_PACKAGE_CONTACT "waitroom maintainers <maintainers@waitroom.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "self-hosted waiting-room gateway")
set(CPACK_PACKAGE_DESCRIPTION
  "waitroomd is a reverse proxy that holds visitors past a site's limits in a fair virtual queue,
shows them a live queue page and admits them in order as capacity frees.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${_deb}/conffiles ${_deb}/postinst ${_deb}/prerm ${_deb}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
