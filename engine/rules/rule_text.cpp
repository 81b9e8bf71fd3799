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

std::string fill_placeholders(const std::string& text,
                              const std::function<std::string(const std::string&)>& fill) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (size_t n = placeholder_at(text, i)) {
            out += fill(text.substr(i + 1, n - 2));
            i += n - 1;
        } else {
            out += text[i];
        }
    }
    return out;
}

}  // namespace iodiag
