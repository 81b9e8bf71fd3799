#include "engine/rules/rule_text.hpp"

#include <cctype>

namespace iodiag {

namespace {
bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
// Length of the placeholder starting at text[i] == '{', or 0 if it is not one.
size_t placeholder_at(const std::string& text, size_t i) {
    if (text[i] != '{' || (i > 0 && text[i - 1] == '$')) return 0;
    size_t j = i + 1;
    if (j >= text.size() || !name_start(text[j])) return 0;
    while (j < text.size() && name_char(text[j])) ++j;
    if (j >= text.size() || text[j] != '}' || text[j - 1] == '.') return 0;
    return j - i + 1;
}
}  // namespace

std::vector<Placeholder> find_placeholders(const std::string& text) {
    std::vector<Placeholder> out;
    for (size_t i = 0; i < text.size(); ++i)
        if (size_t n = placeholder_at(text, i)) {
            out.push_back({text.substr(i + 1, n - 2), i});
            i += n - 1;
        }
    return out;
}

std::string clause_error(const std::string& text) {
    bool open = false;
    for (size_t i = 0; i + 1 < text.size(); ++i) {
        if (text.compare(i, 2, kClauseOpen) == 0) {
            if (open) return "conditional clause '{?' opened inside another (clauses do not nest)";
            open = true, ++i;
        } else if (text.compare(i, 2, kClauseClose) == 0) {
            if (!open) return "'?}' closes no conditional clause";
            open = false, ++i;
        }
    }
    return open ? "conditional clause '{?' is not closed with '?}'" : "";
}

std::string resolve_clauses(const std::string& text, const std::function<bool(const std::string&)>& known) {
    std::string out;
    size_t i = 0;
    while (i < text.size()) {
        const size_t b = text.find(kClauseOpen, i);
        const size_t e = b == std::string::npos ? std::string::npos : text.find(kClauseClose, b + 2);
        if (e == std::string::npos) {   // no (complete) clause left: the rest as written
            out += text.substr(i);
            break;
        }
        out += text.substr(i, b - i);
        const std::string clause = text.substr(b + 2, e - b - 2);
        bool keep = true;
        for (const auto& ph : find_placeholders(clause)) keep = keep && known(ph.name);
        if (keep) {
            out += clause;
        } else if (!out.empty() && out.back() == ' ' && e + 2 < text.size() && text[e + 2] == ' ') {
            out.pop_back();   // "a {?b ?} c" without b reads "a c", not "a  c"
        }
        i = e + 2;
    }
    return out;
}

std::string fill_placeholders(const std::string& text,
                              const std::function<std::string(const std::string&)>& fill) {
    // Jumps from one '{' to the next (every rule result fills its title,
    // mechanism and fixes, most of them without a placeholder at all).
    std::string out;
    out.reserve(text.size());
    size_t done = 0;
    for (size_t i = text.find('{'); i != std::string::npos; i = text.find('{', i + 1)) {
        if (size_t n = placeholder_at(text, i)) {
            out.append(text, done, i - done);
            out += fill(text.substr(i + 1, n - 2));
            done = i + n;
            i += n - 1;
        }
    }
    out.append(text, done, std::string::npos);
    return out;
}

}  // namespace iodiag
