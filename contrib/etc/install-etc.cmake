# Run by `cmake --install` (and CPack): /etc/default/iodiag and the site
# configuration /etc/iodiag/iodiag.yaml. For prefix /usr (the package) they go
# to /etc, where iodiag and the units read them (GNUInstallDirs' rule for
# /usr); for any other prefix under <prefix>/etc, as examples, so that an
# install into a scratch prefix never writes the real /etc. file(INSTALL)
# prepends $DESTDIR itself. Set by the install(CODE) before this script:
# IODIAG_ETC_SOURCES.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc /etc)
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
endif()
file(INSTALL "${IODIAG_ETC_SOURCES}/default-iodiag" DESTINATION "${etc}/default"
     RENAME iodiag PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${IODIAG_ETC_SOURCES}/iodiag.yaml" DESTINATION "${etc}/iodiag"
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
