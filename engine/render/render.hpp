// Renderers of a Verdict: text for a terminal (readable at 2 a.m.), JSON
// (schema "iodiag-verdict", versioned; documented in README "JSON verdict")
// and Markdown (a ticket body, render_markdown.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/triage/verdict.hpp"

namespace iodiag {

std::string render_text(const Verdict& v);
nlohmann::json render_json(const Verdict& v);
std::string render_markdown(const Verdict& v);

}  // namespace iodiag
