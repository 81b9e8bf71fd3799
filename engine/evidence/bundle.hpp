// The evidence bundle: Evidence serialised as versioned JSON, so that a verdict
// can be replayed and re-checked offline. Schema: docs in README ("Bundle").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/evidence/evidence.hpp"

namespace iodiag {

nlohmann::json evidence_to_json(const Evidence& ev);
// Throws std::runtime_error with a message naming what is wrong.
Evidence evidence_from_json(const nlohmann::json& j);

// Writes atomically (temporary file in the same directory, then rename), so a
// reader never sees a half-written bundle. Throws std::runtime_error.
void write_file_atomically(const std::string& path, const std::string& content);
void save_bundle(const std::string& path, const Evidence& ev);
// Throws std::runtime_error naming the path on unreadable or malformed input.
Evidence load_bundle(const std::string& path);

}  // namespace iodiag
