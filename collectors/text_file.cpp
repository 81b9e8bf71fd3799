#include "collectors/text_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace iodiag {

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw SourceError(path + ": " + std::strerror(errno));
    // procfs and sysfs files report size 0: read in chunks and stop at the limit
    // (a broken driver's attribute, or a path that leads to /dev/zero, must not
    // cost unbounded memory).
    std::string text;
    char chunk[65536];
    while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
        text.append(chunk, static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxKernelTextBytes)
            throw SourceError(path + ": more than " + std::to_string(kMaxKernelTextBytes >> 20) +
                              " MiB: not a kernel text file iodiag reads");
    }
    if (in.bad()) throw SourceError(path + ": read error");
    return text;
}

std::optional<std::string> try_read_text_file(const std::string& path) {
    try {
        return read_text_file(path);
    } catch (const SourceError&) {
        return std::nullopt;
    }
}

std::optional<std::string> try_read_first_line(const std::string& path) {
    auto text = try_read_text_file(path);
    if (!text) return std::nullopt;
    std::string line = text->substr(0, text->find('\n'));
    const auto b = line.find_first_not_of(" \t\r");
    const auto e = line.find_last_not_of(" \t\r");
    if (b == std::string::npos) return std::string{};
    return line.substr(b, e - b + 1);
}

std::string under_root(const std::string& root, const std::string& abs_path) {
    if (root.empty() || root == "/") return abs_path;
    std::string r = root;
    while (!r.empty() && r.back() == '/') r.pop_back();
    return r + abs_path;
}

void for_each_line(const std::string& text, const std::string& path, const LineVisitor& fn) {
    std::size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
        const auto nl = text.find('\n', pos);
        const std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
        pos = nl == std::string::npos ? text.size() : nl + 1;
        ++line_no;
        const auto fields = split_ws(line);
        if (fields.empty()) continue;
        fn(fields, line, path + ":" + std::to_string(line_no));
    }
}

std::vector<std::string> split_ws(const std::string& line) {
    std::vector<std::string> out;
    std::istringstream ss(line);
    std::string tok;
    while (ss >> tok) out.push_back(tok);
    return out;
}

unsigned long long parse_u64(const std::string& s, const std::string& where) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        throw SourceError(where + ": expected an unsigned number, got '" + s + "'");
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
    if (errno == ERANGE) throw SourceError(where + ": number out of range '" + s + "'");
    return v;
}

long long parse_i64(const std::string& s, const std::string& where) {
    const std::string digits = (!s.empty() && s[0] == '-') ? s.substr(1) : s;
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        throw SourceError(where + ": expected a number, got '" + s + "'");
    errno = 0;
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE) throw SourceError(where + ": number out of range '" + s + "'");
    return v;
}

}  // namespace iodiag
