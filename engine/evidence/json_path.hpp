// Reading untrusted JSON with errors that say where: every access goes through
// a JsonAt that knows its path ("metrics[12].value"), and every mismatch throws
// JsonPathError("metrics[12].value: expected a number, got null") instead of a
// library's exception text. Used by the bundle reader; any other JSON input
// (site configs, histories) can use it the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace iodiag {

struct JsonPathError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class JsonAt {
public:
    JsonAt(const nlohmann::json& j, std::string path) : j_(j), path_(std::move(path)) {}

    const std::string& path() const { return path_; }
    const nlohmann::json& json() const { return j_; }
    // "<path>: <message>"
    [[noreturn]] void fail(const std::string& message) const;

    // Objects. at(): a required key; find(): nullopt when the key is absent.
    JsonAt at(const std::string& key) const;
    std::optional<JsonAt> find(const std::string& key) const;
    // Arrays: calls fn(element) for each, element paths "path[i]".
    void each(const std::function<void(const JsonAt&)>& fn) const;
    size_t array_size() const;
    // Objects: calls fn(key, value) for each member, value paths "path.key".
    void members(const std::function<void(const std::string&, const JsonAt&)>& fn) const;

    // Scalars, checked. number(): finite (NaN and infinities cannot be true of
    // anything measured); non_negative(): also >= 0.
    std::string string() const;
    bool boolean() const;
    double number() const;
    double non_negative() const;
    uint64_t count() const;   // an unsigned integer
    int integer() const;

    // Shapes used throughout the bundle.
    std::map<std::string, std::string> string_map() const;   // {"k": "v", ...}
    std::vector<std::string> strings() const;                // ["a", "b"]

    // Optional members with a default.
    std::string string_or(const std::string& key, const std::string& fallback) const;

private:
    void expect(bool ok, const char* what) const;
    const nlohmann::json& j_;
    std::string path_;
};

// "null", "true", "a number (1e+300)", "a string (\"abc\")", "an object", "an array"
std::string describe_json(const nlohmann::json& j);

}  // namespace iodiag
