// The evidence bundle: Evidence serialised as versioned JSON, so that a verdict
// can be replayed and re-checked offline. Schema: docs/verdict-and-schemas.md ("Evidence bundle").
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

// A bundle that cannot be read. what() says where: the file (when read from
// one), then the JSON path and what was expected there, e.g.
//   "b.json: metrics[12].value: expected a number, got null"
// Values that cannot be true of anything measured are refused the same way:
// NaN and infinities, negative histogram counts, negative durations in
// exemplars, more series intervals than the window holds, negative counts,
// sizes, times, rates and shares and rates beyond any machine (by their unit,
// value_bounds.hpp), the same series (name and labels) twice, and labels
// longer than any a collector writes.
struct BundleError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Limits that keep a hostile or corrupt file from costing unbounded memory or
// time. iodiag's own bundles stay far below them (a 4 s window is ~250 KiB).
inline constexpr size_t kMaxBundleBytes = size_t{256} << 20;
inline constexpr int kMaxBundleDepth = 32;

nlohmann::json evidence_to_json(const Evidence& ev);
// Throws BundleError naming the path inside the document.
Evidence evidence_from_json(const nlohmann::json& j);
// The text of a bundle: size limit, JSON syntax (line and column), then
// evidence_from_json. Throws BundleError.
Evidence parse_bundle(const std::string& text);

// The bundle's text as save_bundle() writes it (bytes that are not UTF-8 in
// labels or names become U+FFFD).
std::string bundle_text(const Evidence& ev);

void save_bundle(const std::string& path, const Evidence& ev);
// Throws BundleError naming the file (and the path inside it) on unreadable or
// malformed input.
Evidence load_bundle(const std::string& path);

}  // namespace iodiag
