#include "collectors/kallsyms.hpp"

#include <algorithm>
#include <sstream>

namespace iodiag {

namespace {
struct Sym {
    uint64_t addr;
    bool text;
    std::string name;
};

bool parse_line(const std::string& line, Sym& out) {
    std::istringstream in(line);
    std::string addr, type, name;
    if (!(in >> addr >> type >> name) || type.size() != 1) return false;
    try {
        size_t used = 0;
        out.addr = std::stoull(addr, &used, 16);
        if (used != addr.size()) return false;
    } catch (...) {
        return false;
    }
    out.text = type[0] == 't' || type[0] == 'T';
    out.name = std::move(name);
    return true;
}
}  // namespace

std::vector<KernelSymbolRange> resolve_kernel_symbols(const std::string& kallsyms_text,
                                                      const std::map<std::string, int>& wanted) {
    std::vector<Sym> syms;
    std::istringstream in(kallsyms_text);
    std::string line;
    while (std::getline(in, line)) {
        Sym s;
        if (parse_line(line, s) && s.addr != 0) syms.push_back(std::move(s));
    }
    std::stable_sort(syms.begin(), syms.end(), [](const Sym& a, const Sym& b) { return a.addr < b.addr; });

    // The end of a symbol is the next symbol at a higher address (aliases share
    // one): found in one backward pass, so many aliases at one address cost
    // linear time, not quadratic.
    std::vector<uint64_t> next_higher(syms.size(), 0);
    for (size_t i = syms.size(); i-- > 0;) {
        if (i + 1 < syms.size())
            next_higher[i] = syms[i + 1].addr > syms[i].addr ? syms[i + 1].addr : next_higher[i + 1];
    }
    std::vector<KernelSymbolRange> out;
    for (size_t i = 0; i < syms.size(); ++i) {
        if (!syms[i].text) continue;
        std::string base = syms[i].name.substr(0, syms[i].name.find('.'));
        auto it = wanted.find(base);
        if (it == wanted.end()) continue;
        const uint64_t end = next_higher[i];
        if (end == 0) continue;   // last symbol: size unknown, skip rather than guess
        out.push_back({syms[i].addr, end, base, it->second});
    }
    // Aliases at the same address would give duplicate ranges.
    out.erase(std::unique(out.begin(), out.end(),
                          [](const auto& a, const auto& b) { return a.start == b.start; }),
              out.end());
    return out;
}

}  // namespace iodiag
