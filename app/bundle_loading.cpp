#include "app/bundle_loading.hpp"

#include <iostream>

#include "app/commands.hpp"
#include "engine/evidence/bundle.hpp"

namespace iodiag::cli {

Evidence load_bundle_or_exit(const std::string& command, const std::string& path) {
    try {
        return load_bundle(path);
    } catch (const std::exception& e) {
        std::cerr << "iodiag " << command << ": " << e.what() << "\n";
        throw ExitCode{3};
    }
}

}  // namespace iodiag::cli
