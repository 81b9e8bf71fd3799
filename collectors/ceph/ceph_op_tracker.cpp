#include "collectors/ceph/ceph_op_tracker.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace iodiag {

using nlohmann::json;

namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

std::optional<double> first_event(const TrackedOp& op, std::string_view name) {
    for (const auto& [e, t] : op.events)
        if (e == name) return t;
    return std::nullopt;
}

std::optional<double> first_event_prefix(const TrackedOp& op, std::string_view prefix) {
    for (const auto& [e, t] : op.events)
        if (starts_with(e, prefix)) return t;
    return std::nullopt;
}

std::optional<double> last_event_prefix(const TrackedOp& op, std::string_view prefix) {
    std::optional<double> last;
    for (const auto& [e, t] : op.events)
        if (starts_with(e, prefix)) last = t;
    return last;
}

std::optional<double> span(std::optional<double> a, std::optional<double> b) {
    if (!a || !b || *b < *a) return std::nullopt;
    return *b - *a;
}

// "osd_op(client.4140.0:1577 2.19 ... ondisk+write+known_if_redirected e19)"
void classify(TrackedOp& op) {
    const std::string& d = op.description;
    auto first_token = [&](size_t from) {
        const size_t end = d.find_first_of(" )", from);
        return d.substr(from, end == std::string::npos ? std::string::npos : end - from);
    };
    if (starts_with(d, "osd_op(")) {
        op.reqid = first_token(7);
        // The flags are the word before the closing " eNN)"; ops list "write" /
        // "read" there (CEPH_OSD_FLAG_WRITE / _READ).
        const size_t close = d.rfind(" e");
        const size_t open = close == std::string::npos ? std::string::npos : d.rfind(' ', close - 1);
        const std::string flags = open == std::string::npos ? "" : d.substr(open + 1, close - open - 1);
        auto has_flag = [&](std::string_view f) {
            for (size_t at = flags.find(f); at != std::string::npos; at = flags.find(f, at + 1)) {
                const bool b = at == 0 || flags[at - 1] == '+';
                const bool e = at + f.size() == flags.size() || flags[at + f.size()] == '+';
                if (b && e) return true;
            }
            return false;
        };
        op.kind = has_flag("write") ? TrackedOp::Kind::ClientWrite
                  : has_flag("read") ? TrackedOp::Kind::ClientRead
                                     : TrackedOp::Kind::ClientOther;
    } else if (starts_with(d, "osd_repop(")) {
        op.kind = TrackedOp::Kind::Replica;
        op.reqid = first_token(10);
    }
    for (const auto& [e, t] : op.events) {
        if (!starts_with(e, "waiting for subops from ")) continue;
        const std::string list = e.substr(24);
        size_t at = 0;
        while (at < list.size()) {
            size_t end = list.find(',', at);
            if (end == std::string::npos) end = list.size();
            const std::string id = list.substr(at, end - at);
            if (!id.empty() && id.size() < 9 && std::all_of(id.begin(), id.end(), [](unsigned char c) { return std::isdigit(c); }))
                op.peers.push_back(std::stoi(id));
            at = end + 1;
        }
        break;
    }
}

}  // namespace

std::optional<double> parse_ceph_timestamp(std::string_view text) {
    // 2026-12-01T07:10:55.959332+0000 (also accepts a space for the T, and Z)
    if (text.size() < 19 || text.size() > 40) return std::nullopt;
    const std::string s(text);
    std::tm tm{};
    int consumed = 0;
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &consumed) != 6 || consumed != 19)
        return std::nullopt;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 60 || tm.tm_year < 1970 || tm.tm_year > 9999)
        return std::nullopt;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    double t = static_cast<double>(timegm(&tm));
    size_t i = 19;
    if (i < s.size() && s[i] == '.') {
        double scale = 0.1;
        for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, scale /= 10) t += (s[i] - '0') * scale;
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-') && s.size() - i == 5 &&
        std::all_of(s.begin() + static_cast<long>(i) + 1, s.end(), [](unsigned char c) { return std::isdigit(c); })) {
        const int hh = (s[i + 1] - '0') * 10 + (s[i + 2] - '0'), mm = (s[i + 3] - '0') * 10 + (s[i + 4] - '0');
        const int off = (hh * 60 + mm) * 60;
        t -= s[i] == '+' ? off : -off;
        i = s.size();
    } else if (i < s.size() && s[i] == 'Z') {
        ++i;
    }
    if (i != s.size()) return std::nullopt;
    return t;
}

std::optional<double> TrackedOp::before_queue() const {
    return span(first_event(*this, "initiated"), first_event(*this, "queued_for_pg"));
}
std::optional<double> TrackedOp::queue_wait() const {
    return span(first_event(*this, "queued_for_pg"), first_event(*this, "reached_pg"));
}
std::optional<double> TrackedOp::replica_wait() const {
    return span(first_event_prefix(*this, "waiting for subops from "), last_event_prefix(*this, "sub_op_commit_rec"));
}
std::optional<double> TrackedOp::local_commit() const {
    return span(first_event_prefix(*this, "waiting for subops from "), first_event(*this, "op_commit"));
}
double TrackedOp::rw_lock_wait() const {
    double total = 0;
    for (size_t i = 0; i + 1 < events.size(); ++i)
        if (events[i].first == "waiting for rw locks" && events[i + 1].second >= events[i].second)
            total += events[i + 1].second - events[i].second;
    return total;
}
bool TrackedOp::waited_for_rw_locks() const {
    return std::any_of(events.begin(), events.end(), [](const auto& e) { return e.first == "waiting for rw locks"; });
}

TrackedOpsParse parse_tracked_ops(std::string_view text) {
    TrackedOpsParse out;
    const json j = json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        out.error = "op dump: not a JSON object";
        return out;
    }
    const json* list = nullptr;
    for (const char* key : {"ops", "Ops"})
        if (j.contains(key) && j[key].is_array()) list = &j[key];
    if (!list) {
        out.error = "op dump: no \"ops\" list (another Ceph version?)";
        return out;
    }
    for (const json& o : *list) {
        if (!o.is_object()) continue;
        TrackedOp op;
        if (auto d = o.find("description"); d != o.end() && d->is_string()) op.description = d->get<std::string>();
        auto init = o.find("initiated_at");
        if (init == o.end() || !init->is_string()) continue;
        auto t0 = parse_ceph_timestamp(init->get<std::string>());
        if (!t0) continue;
        op.initiated_unix = *t0;
        if (auto d = o.find("duration"); d != o.end() && d->is_number()) op.duration_s = std::max(0.0, d->get<double>());
        else if (auto a = o.find("age"); a != o.end() && a->is_number()) op.duration_s = std::max(0.0, a->get<double>());
        if (auto td = o.find("type_data"); td != o.end() && td->is_object()) {
            if (auto fp = td->find("flag_point"); fp != td->end() && fp->is_string()) op.flag_point = fp->get<std::string>();
            if (auto ev = td->find("events"); ev != td->end() && ev->is_array()) {
                for (const json& e : *ev) {
                    if (!e.is_object()) continue;
                    auto name = e.find("event");
                    auto time = e.find("time");
                    if (name == e.end() || time == e.end() || !name->is_string() || !time->is_string()) continue;
                    if (auto t = parse_ceph_timestamp(time->get<std::string>())) op.events.push_back({name->get<std::string>(), *t});
                }
            }
        }
        classify(op);
        out.ops.push_back(std::move(op));
    }
    return out;
}

}  // namespace iodiag
