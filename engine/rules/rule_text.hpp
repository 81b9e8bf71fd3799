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

// Conditional clauses: "{? ... ?}" is kept, without its markers, when every
// placeholder inside it is measured (known(name)), and dropped whole when one
// is not, so a sentence still reads as a sentence on a host where an optional
// collector did not run ("The data came mostly from {io.top_writer}." becomes
// nothing rather than "(io.top_writer not measured)"). Clauses do not nest.
inline constexpr const char* kClauseOpen = "{?";
inline constexpr const char* kClauseClose = "?}";
std::string resolve_clauses(const std::string& text, const std::function<bool(const std::string&)>& known);
// An error message for unbalanced or nested clause markers, or "" when they are well formed.
std::string clause_error(const std::string& text);

// Replaces each placeholder with fill(name).
std::string fill_placeholders(const std::string& text,
                              const std::function<std::string(const std::string&)>& fill);

}  // namespace iodiag
