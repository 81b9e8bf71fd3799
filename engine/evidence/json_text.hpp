// Writing JSON that holds outside text. Process names, file names, cgroup
// paths and labels from a stranger's bundle are bytes, not necessarily UTF-8;
// nlohmann's dump() throws on invalid UTF-8. Every JSON iodiag prints or
// writes goes through json_text(), which writes such bytes as U+FFFD instead.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace iodiag {

// indent -1: one line; otherwise pretty-printed with that many spaces.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace iodiag
