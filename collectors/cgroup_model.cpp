#include "collectors/cgroup_model.hpp"

#include <sstream>

#include "collectors/text_file.hpp"

namespace iodiag::cgroup {

namespace {
std::string at(const std::string& path, int line_no) { return path + ":" + std::to_string(line_no); }
}  // namespace

Pressure parse_pressure(const std::string& text, const std::string& path) {
    Pressure p;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto f = split_ws(line);
        if (f.empty()) continue;
        if (f[0] != "some" && f[0] != "full")
            throw SourceError(at(path, n) + ": expected 'some' or 'full', got '" + f[0] + "'");
        std::optional<uint64_t> total;
        for (size_t i = 1; i < f.size(); ++i)
            if (f[i].rfind("total=", 0) == 0) total = parse_u64(f[i].substr(6), at(path, n));
        if (!total) throw SourceError(at(path, n) + ": no total= field");
        (f[0] == "some" ? p.some_us : p.full_us) = total;
    }
    if (!p.some_us) throw SourceError(path + ": no 'some' line");
    return p;
}

std::map<std::string, uint64_t> parse_flat_keyed(const std::string& text, const std::string& path) {
    std::map<std::string, uint64_t> out;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto f = split_ws(line);
        if (f.empty()) continue;
        if (f.size() != 2) throw SourceError(at(path, n) + ": expected 'key value'");
        out[f[0]] = parse_u64(f[1], at(path, n));
    }
    return out;
}

std::map<std::string, uint64_t> parse_device_values(const std::string& text, const std::string& path) {
    std::map<std::string, uint64_t> out;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto f = split_ws(line);
        if (f.empty()) continue;
        if (f.size() != 2 || f[0].find(':') == std::string::npos)
            throw SourceError(at(path, n) + ": expected 'MAJ:MIN value'");
        out[f[0]] = parse_u64(f[1], at(path, n));
    }
    return out;
}

std::map<std::string, std::map<std::string, uint64_t>> parse_nested_keyed(const std::string& text,
                                                                        const std::string& path) {
    std::map<std::string, std::map<std::string, uint64_t>> out;
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        const auto f = split_ws(line);
        if (f.empty()) continue;
        if (f[0].find(':') == std::string::npos)
            throw SourceError(at(path, n) + ": expected 'MAJ:MIN key=value ...'");
        auto& dev = out[f[0]];
        for (size_t i = 1; i < f.size(); ++i) {
            const auto eq = f[i].find('=');
            if (eq == std::string::npos) throw SourceError(at(path, n) + ": '" + f[i] + "' is not key=value");
            const std::string v = f[i].substr(eq + 1);
            if (v == "max") continue;
            // io.stat may carry non-integer extras (iocost "cost.vrate=..."): keep integers only.
            if (v.find_first_not_of("0123456789") != std::string::npos) continue;
            dev[f[i].substr(0, eq)] = parse_u64(v, at(path, n));
        }
    }
    return out;
}

}  // namespace iodiag::cgroup
