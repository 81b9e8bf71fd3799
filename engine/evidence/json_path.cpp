#include "engine/evidence/json_path.hpp"

#include <cmath>
#include <limits>

namespace iodiag {

using nlohmann::json;

namespace {
std::string child(const std::string& path, const std::string& key) {
    // Keys that are not plain identifiers are quoted, so the path stays unambiguous.
    const bool plain = !key.empty() && key.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
                                           std::string::npos;
    const std::string part = plain ? key : json(key).dump(-1, ' ', true, json::error_handler_t::replace);
    if (path.empty()) return part;
    return path + (plain ? "." + part : "[" + part + "]");
}

std::string shortened(std::string s) {
    constexpr size_t kMax = 40;
    if (s.size() > kMax) s = s.substr(0, kMax) + "...";
    return s;
}
}  // namespace

std::string describe_json(const json& j) {
    switch (j.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return j.get<bool>() ? "true" : "false";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float: {
            if (j.is_number_float() && !std::isfinite(j.get<double>())) {
                const double v = j.get<double>();
                return std::string("a number that is not finite (") + (std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf") +
                       ")";
            }
            return "a number (" + shortened(j.dump()) + ")";
        }
        case json::value_t::string:
            return "a string (" + shortened(j.dump(-1, ' ', true, json::error_handler_t::replace)) + ")";
        case json::value_t::object: return "an object";
        case json::value_t::array: return "an array";
        default: return "nothing";
    }
}

void JsonAt::fail(const std::string& message) const {
    throw JsonPathError((path_.empty() ? std::string("(top level)") : path_) + ": " + message);
}

void JsonAt::expect(bool ok, const char* what) const {
    if (!ok) fail(std::string("expected ") + what + ", got " + describe_json(j_));
}

JsonAt JsonAt::at(const std::string& key) const {
    expect(j_.is_object(), "an object");
    auto it = j_.find(key);
    if (it == j_.end()) fail("missing \"" + key + "\"");
    return JsonAt(*it, child(path_, key));
}

std::optional<JsonAt> JsonAt::find(const std::string& key) const {
    expect(j_.is_object(), "an object");
    auto it = j_.find(key);
    if (it == j_.end()) return std::nullopt;
    return JsonAt(*it, child(path_, key));
}

void JsonAt::each(const std::function<void(const JsonAt&)>& fn) const {
    expect(j_.is_array(), "an array");
    for (size_t i = 0; i < j_.size(); ++i) fn(JsonAt(j_[i], path_ + "[" + std::to_string(i) + "]"));
}

size_t JsonAt::array_size() const {
    expect(j_.is_array(), "an array");
    return j_.size();
}

void JsonAt::members(const std::function<void(const std::string&, const JsonAt&)>& fn) const {
    expect(j_.is_object(), "an object");
    for (auto it = j_.begin(); it != j_.end(); ++it) fn(it.key(), JsonAt(it.value(), child(path_, it.key())));
}

std::string JsonAt::string() const {
    expect(j_.is_string(), "a string");
    return j_.get<std::string>();
}

bool JsonAt::boolean() const {
    expect(j_.is_boolean(), "true or false");
    return j_.get<bool>();
}

double JsonAt::number() const {
    expect(j_.is_number(), "a number");
    const double v = j_.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number, got " + describe_json(j_));
    return v;
}

double JsonAt::non_negative() const {
    const double v = number();
    if (v < 0) fail("expected a number >= 0, got " + describe_json(j_));
    return v;
}

uint64_t JsonAt::count() const {
    if (j_.is_number_unsigned()) return j_.get<uint64_t>();
    if (j_.is_number_integer()) {
        if (j_.get<int64_t>() < 0) fail("expected a count (an integer >= 0), got " + describe_json(j_));
        return static_cast<uint64_t>(j_.get<int64_t>());
    }
    // 3.0 is a count; 3.5, 1e300 and -1.0 are not.
    if (j_.is_number_float()) {
        const double v = j_.get<double>();
        if (std::isfinite(v) && v >= 0 && v < 18446744073709551616.0 && std::floor(v) == v)
            return static_cast<uint64_t>(v);
    }
    fail("expected a count (an integer >= 0), got " + describe_json(j_));
}

int JsonAt::integer() const {
    if (j_.is_number_integer() || j_.is_number_unsigned()) {
        if (j_.is_number_unsigned() ? j_.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int>::max())
                                    : (j_.get<int64_t>() >= std::numeric_limits<int>::min() &&
                                       j_.get<int64_t>() <= std::numeric_limits<int>::max()))
            return static_cast<int>(j_.get<int64_t>());
    }
    fail("expected an integer, got " + describe_json(j_));
}

std::map<std::string, std::string> JsonAt::string_map() const {
    std::map<std::string, std::string> out;
    members([&](const std::string& k, const JsonAt& v) { out[k] = v.string(); });
    return out;
}

std::vector<std::string> JsonAt::strings() const {
    std::vector<std::string> out;
    each([&](const JsonAt& v) { out.push_back(v.string()); });
    return out;
}

std::string JsonAt::string_or(const std::string& key, const std::string& fallback) const {
    auto v = find(key);
    return v ? v->string() : fallback;
}

}  // namespace iodiag
