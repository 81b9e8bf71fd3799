# Precompiled headers: most translation units parse the same third-party
# headers (nlohmann/json alone is ~2 s of a 2-core machine's CPU per file,
# spdlog and the standard library ~1.5 s more, CLI11 ~5 s in app/); each
# target parses them once into a PCH instead. Measured figures: docs/development.md
# ("Build time").
#
#   -DIODIAG_PCH=OFF   builds without (e.g. to check that every file includes
#                      what it uses: a PCH makes its headers visible everywhere)
option(IODIAG_PCH "Precompile the heavy third-party headers of each target" ON)

set(IODIAG_PCH_COMMON
  <algorithm> <chrono> <cstdint> <filesystem> <functional> <map> <memory>
  <optional> <set> <sstream> <string> <vector>
  <nlohmann/json.hpp> <spdlog/spdlog.h>)

# iodiag_precompile(TARGET [EXTRA_HEADER...]): the common set plus the
# target's own heavy headers (CLI11 for the app, GoogleTest for the tests).
function(iodiag_precompile target)
  if(IODIAG_PCH)
    target_precompile_headers(${target} PRIVATE ${IODIAG_PCH_COMMON} ${ARGN})
  endif()
endfunction()
