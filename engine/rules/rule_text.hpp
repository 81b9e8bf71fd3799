// Placeholders in rule and playbook text: "{device}" (the rule's instance) and
// "{disk.await_ms}" (a metric's formatted value). A placeholder is a name made
// of letters, digits, '_' and '.', starting with a letter or '_', between
// braces; any other brace (e.g. a shell "${x}" or JSON) is left as written.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace iodiag {

struct Placeholder {
    std::string name;
    size_t offset = 0;   // of the '{'
};

std::vector<Placeholder> find_placeholders(const std::string& text);

// Replaces each placeholder with fill(name).
std::string fill_placeholders(const std::string& text,
                              const std::function<std::string(const std::string&)>& fill);

}  // namespace iodiag
