// Where the data directories (rules/, playbooks/) are: an explicit option, the
// environment (IODIAG_RULES_DIR, IODIAG_PLAYBOOKS_DIR), next to the binary
// (<exe>/../share/iodiag/<name> or <exe>/../<name>), or the source tree the
// binary was built from.
#pragma once

#include <string>

namespace iodiag::cli {

// name: "rules" or "playbooks". Returns the first candidate that is a directory,
// or the explicit one as given (so the error names what the user asked for).
std::string find_data_dir(const std::string& name, const std::string& explicit_dir);

}  // namespace iodiag::cli
