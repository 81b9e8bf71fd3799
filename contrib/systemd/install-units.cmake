# Run by `cmake --install` (and CPack): writes the systemd units with the
# binary's path under the prefix the install actually uses (a --prefix given
# at install time, CPack's /usr), so an ExecStart never names another tree.
# Set by the install(CODE) before this script: IODIAG_UNIT_TEMPLATES,
# IODIAG_UNIT_DIR (relative to the prefix, or absolute), IODIAG_BINDIR_REL,
# IODIAG_DOCDIR_REL.
set(IODIAG_BINDIR "${CMAKE_INSTALL_PREFIX}/${IODIAG_BINDIR_REL}")
set(IODIAG_DOCDIR "${CMAKE_INSTALL_PREFIX}/${IODIAG_DOCDIR_REL}")
if(IS_ABSOLUTE "${IODIAG_UNIT_DIR}")
  set(unit_dir "$ENV{DESTDIR}${IODIAG_UNIT_DIR}")
else()
  set(unit_dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${IODIAG_UNIT_DIR}")
endif()
file(GLOB templates "${IODIAG_UNIT_TEMPLATES}/*.in")
foreach(template IN LISTS templates)
  get_filename_component(name "${template}" NAME)
  string(REGEX REPLACE "\\.in$" "" name "${name}")
  message(STATUS "Installing: ${unit_dir}/${name}")
  configure_file("${template}" "${unit_dir}/${name}" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${unit_dir}/${name}")
endforeach()
