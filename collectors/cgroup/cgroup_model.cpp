#include "collectors/cgroup/cgroup_model.hpp"

#include "collectors/procfs/psi.hpp"
#include "collectors/text_file.hpp"

namespace iodiag::cgroup {

// Same format as /proc/pressure/*: one parser for both.
Pressure parse_pressure(const std::string& text, const std::string& path) { return parse_psi(text, path); }

std::map<std::string, uint64_t> parse_flat_keyed(const std::string& text, const std::string& path) {
    std::map<std::string, uint64_t> out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string&, const std::string& where) {
        if (f.size() != 2) throw SourceError(where + ": expected 'key value'");
        out[f[0]] = parse_u64(f[1], where);
    });
    return out;
}

std::map<std::string, uint64_t> parse_device_values(const std::string& text, const std::string& path) {
    std::map<std::string, uint64_t> out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string&, const std::string& where) {
        if (f.size() != 2 || f[0].find(':') == std::string::npos)
            throw SourceError(where + ": expected 'MAJ:MIN value'");
        out[f[0]] = parse_u64(f[1], where);
    });
    return out;
}

std::map<std::string, std::map<std::string, uint64_t>> parse_nested_keyed(const std::string& text,
                                                                        const std::string& path) {
    std::map<std::string, std::map<std::string, uint64_t>> out;
    for_each_line(text, path, [&](const std::vector<std::string>& f, const std::string&, const std::string& where) {
        if (f[0].find(':') == std::string::npos)
            throw SourceError(where + ": expected 'MAJ:MIN key=value ...'");
        auto& dev = out[f[0]];
        for (size_t i = 1; i < f.size(); ++i) {
            const auto eq = f[i].find('=');
            if (eq == std::string::npos) throw SourceError(where + ": '" + f[i] + "' is not key=value");
            const std::string v = f[i].substr(eq + 1);
            if (v == "max") continue;
            // io.stat may carry non-integer extras (iocost "cost.vrate=..."): keep integers only.
            if (v.find_first_not_of("0123456789") != std::string::npos) continue;
            dev[f[i].substr(0, eq)] = parse_u64(v, where);
        }
    });
    return out;
}

}  // namespace iodiag::cgroup
