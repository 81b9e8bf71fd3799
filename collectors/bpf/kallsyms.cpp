#include "collectors/bpf/kallsyms.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace iodiag {

namespace {

// "ffffffff81000000 T _stext [module]": address, one-letter type, name.
bool parse_line(const char* p, const char* line_end, uint64_t& addr, char& type, const char*& name,
                size_t& name_len) {
    while (p < line_end && *p == ' ') ++p;
    uint64_t v = 0;
    const char* digits = p;
    for (; p < line_end; ++p) {
        const char c = *p;
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else break;
        v = v << 4 | uint64_t(d);
    }
    if (p == digits || p + 3 > line_end || p[0] != ' ' || p[2] != ' ') return false;
    addr = v;
    type = p[1];
    name = p + 3;
    const char* e = name;
    while (e < line_end && *e != ' ' && *e != '\t') ++e;
    name_len = size_t(e - name);
    return name_len > 0;
}

// Collects addresses and wanted symbols line by line.
class Collect {
public:
    explicit Collect(const std::map<std::string, int>& wanted) : wanted_(wanted) { addrs_.reserve(1 << 18); }
    void line(const char* p, const char* end) {
        uint64_t addr = 0;
        char type = 0;
        const char* name = nullptr;
        size_t len = 0;
        if (!parse_line(p, end, addr, type, name, len) || addr == 0) return;
        addrs_.push_back(addr);
        if (type != 't' && type != 'T') return;
        const char* dot = static_cast<const char*>(memchr(name, '.', len));
        base_.assign(name, dot ? size_t(dot - name) : len);
        auto it = wanted_.find(base_);
        if (it != wanted_.end()) hits_.push_back({addr, 0, it->first, it->second});
    }
    std::vector<KernelSymbolRange> finish() {
        std::sort(addrs_.begin(), addrs_.end());
        std::vector<KernelSymbolRange> out;
        for (auto& h : hits_) {
            // The end is the next symbol at a higher address (aliases share one);
            // the last symbol's size is unknown: skipped rather than guessed.
            auto next = std::upper_bound(addrs_.begin(), addrs_.end(), h.start);
            if (next == addrs_.end()) continue;
            h.end = *next;
            out.push_back(std::move(h));
        }
        std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
        // Aliases at the same address would give duplicate ranges.
        out.erase(std::unique(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start == b.start; }),
                  out.end());
        return out;
    }

private:
    const std::map<std::string, int>& wanted_;
    std::vector<uint64_t> addrs_;   // every symbol's address: where the previous one ends
    std::vector<KernelSymbolRange> hits_;
    std::string base_;
};

}  // namespace

std::vector<KernelSymbolRange> resolve_kernel_symbols(const std::string& kallsyms_text,
                                                      const std::map<std::string, int>& wanted) {
    Collect c(wanted);
    const char* p = kallsyms_text.data();
    const char* end = p + kallsyms_text.size();
    while (p < end) {
        const char* nl = static_cast<const char*>(memchr(p, '\n', size_t(end - p)));
        const char* line_end = nl ? nl : end;
        c.line(p, line_end);
        p = line_end + 1;
    }
    return c.finish();
}

std::optional<std::vector<KernelSymbolRange>> resolve_kernel_symbols_in_file(const std::string& path,
                                                                            const std::map<std::string, int>& wanted) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    Collect c(wanted);
    std::vector<char> buf(1 << 20);
    size_t have = 0;
    for (;;) {
        const ssize_t n = read(fd, buf.data() + have, buf.size() - have);
        if (n <= 0) break;
        have += size_t(n);
        const char* p = buf.data();
        const char* end = p + have;
        for (const char* nl; (nl = static_cast<const char*>(memchr(p, '\n', size_t(end - p)))); p = nl + 1)
            c.line(p, nl);
        have = size_t(end - p);   // a partial last line waits for the next read
        std::memmove(buf.data(), p, have);
        if (have == buf.size()) have = 0;   // a line longer than the buffer: dropped
    }
    if (have) c.line(buf.data(), buf.data() + have);
    close(fd);
    return c.finish();
}

}  // namespace iodiag
