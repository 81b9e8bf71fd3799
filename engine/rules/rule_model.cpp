// The small, shared parts of the rule model: names of enums, diagnostics,
// the rule set's JSON form.
#include <algorithm>

#include "engine/evidence/layers.hpp"
#include "engine/rules/rules.hpp"

namespace iodiag {

std::string to_string(Severity s) {
    switch (s) {
        case Severity::Info: return "info";
        case Severity::Warning: return "warning";
        case Severity::Critical: return "critical";
    }
    return "?";
}

std::string to_string(CmpOp op) {
    switch (op) {
        case CmpOp::Gt: return ">";
        case CmpOp::Ge: return ">=";
        case CmpOp::Lt: return "<";
        case CmpOp::Le: return "<=";
        case CmpOp::Eq: return "==";
        case CmpOp::Ne: return "!=";
    }
    return "?";
}

std::string to_string(Priority p) { return "P" + std::to_string(static_cast<int>(p)); }

std::string Diagnostic::to_string() const {
    return pos.file + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) + ": " +
           code + ": " + message;
}

bool RuleSet::ok() const {
    return std::none_of(diagnostics.begin(), diagnostics.end(),
                        [](const Diagnostic& d) { return d.error; });
}

nlohmann::json RuleSet::to_json() const {
    nlohmann::json j;
    j["rules"] = nlohmann::json::array();
    for (const auto& r : rules) j["rules"].push_back(r.id);
    j["diagnostics"] = nlohmann::json::array();
    for (const auto& d : diagnostics)
        j["diagnostics"].push_back({{"code", d.code},
                                    {"severity", d.error ? "error" : "warning"},
                                    {"file", d.pos.file},
                                    {"line", d.pos.line},
                                    {"column", d.pos.column},
                                    {"message", d.message}});
    j["ok"] = ok();
    return j;
}

const std::vector<std::string>& known_layers() { return layer::known(); }

}  // namespace iodiag
