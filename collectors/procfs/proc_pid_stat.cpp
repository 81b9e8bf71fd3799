#include "collectors/procfs/proc_pid_stat.hpp"

#include <cstdlib>

#include "collectors/text_file.hpp"

namespace iodiag {

uint64_t parse_stat_field(const std::string& line, int field, const std::string& what, const std::string& where) {
    const auto close = line.rfind(')');
    if (close == std::string::npos) throw SourceError(where + ": no ')' after the command name");
    const auto rest = split_ws(line.substr(close + 1));
    // rest[0] is field 3 (state).
    const size_t index = static_cast<size_t>(field - 3);
    if (field < 3 || rest.size() <= index)
        throw SourceError(where + ": " + std::to_string(rest.size() + 2) + " fields, need " + std::to_string(field) +
                          " (" + what + ")");
    return parse_u64(rest[index], where + " field " + std::to_string(field));
}

bool stat_says_kernel_thread(const std::string& line) {
    constexpr unsigned long long kPfKthread = 0x00200000;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) return false;
    // After ')', not 2 past it: a stat line that ends at the name (fuzzing
    // found it) made substr throw out_of_range.
    const auto fields = split_ws(line.substr(close + 1));   // fields[0] = state (field 3), fields[6] = flags
    return fields.size() > 6 && (std::strtoull(fields[6].c_str(), nullptr, 10) & kPfKthread);
}

}  // namespace iodiag
