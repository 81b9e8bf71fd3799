// Renderers of a Verdict: text for a terminal (readable at 2 a.m.), JSON
// (schema "iodiag-verdict", versioned; documented in docs/verdict-and-schemas.md "JSON verdict")
// and Markdown (a ticket body, render_markdown.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/triage/verdict.hpp"

namespace iodiag {

struct TextOptions {
    // Every evidence line with its full provenance, every finding's whole
    // mechanism (-v). Without it each distinct provenance is printed once, in
    // a legend, and evidence lines point at it.
    bool verbose = false;
};
std::string render_text(const Verdict& v, const TextOptions& options = {});
// " of APP's slow syscall time" when a finding's share is over another
// application's slow syscalls than the one that suffered most, else "".
inline std::string whose_share(const Finding& f) {
    return f.sufferer.empty() ? "" : " of " + f.sufferer + "'s slow syscall time";
}
// The tag of a note (Verdict::notes): "note", or, for a rule above info
// that was kept out of the findings (unfelt by the slow syscalls, or off the
// triage path), "note; its rule is critical". A bare "[CRITICAL]" under NOTES
// read like a diagnosis the status then did not carry.
inline std::string note_tag(const Finding& f) {
    return f.severity == Severity::Info ? "note" : "note; its rule is " + to_string(f.severity);
}
nlohmann::json render_json(const Verdict& v);
std::string render_markdown(const Verdict& v);

}  // namespace iodiag
