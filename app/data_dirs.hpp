// Where the data directories (rules/, playbooks/, and anything else iodiag
// ships under share/iodiag/) are found. First match wins:
//   1. the explicit option (--rules-dir, --playbooks-dir), taken as given;
//   2. $IODIAG_DATA_DIR/<name>, taken as given when the variable is set;
//   3. the installation the running binary belongs to, <exe>/../share/iodiag/<name>
//      (so a tree installed anywhere with `cmake --install --prefix P` or
//      unpacked from the package finds its own data);
//   4. the install location compiled in, <CMAKE_INSTALL_FULL_DATADIR>/iodiag/<name>;
//   5. the source tree, only for a binary that runs from its build tree.
// `iodiag -v ...` logs which one was used and why.
#pragma once

#include <string>

namespace iodiag::cli {

struct DataDir {
    std::string path;
    std::string how;   // which step of the order found it, e.g. "installation next to the binary"
};

// name: "rules", "playbooks", ... Returns the first candidate of the order
// above; when none exists, the install location (so the error names where the
// data should have been).
DataDir locate_data_dir(const std::string& name, const std::string& explicit_dir);

// locate_data_dir(...).path, logged at debug level (-v).
std::string find_data_dir(const std::string& name, const std::string& explicit_dir);

// The order, for --help texts: "$IODIAG_DATA_DIR/rules, <prefix>/share/iodiag/rules, ...".
std::string data_dir_search_order(const std::string& name);

}  // namespace iodiag::cli
