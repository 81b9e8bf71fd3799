#include "engine/render/render_diff.hpp"

#include <ctime>
#include <sstream>

#include "engine/evidence/format.hpp"

namespace iodiag {

using nlohmann::json;

namespace {


std::string labels_text(const Labels& l) {
    if (l.empty()) return "";
    std::string s = "{";
    for (const auto& [k, v] : l) s += (s.size() > 1 ? "," : "") + k + "=" + v;
    return s + "}";
}

std::string pct(const std::optional<double>& v) { return v ? format_number(*v) + " %" : "-"; }
std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

bool confirmed(const FindingChange& c) { return c.other_side == Tri::False || c.other_side == Tri::True; }

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json side_json(const std::string& host, const Window& w, const std::string& status, const std::string& fp) {
    return {{"host", host},
            {"window", {{"start_unix", w.start_unix}, {"duration_s", w.duration_s}}},
            {"status", status},
            {"fingerprint", fp}};
}

json change_json(const FindingChange& c, bool with_verify) {
    json j{{"rule_id", c.rule_id},
           {"instance_key", c.instance_key},
           {"instance", c.instance},
           {"layer", c.layer},
           {"severity", to_string(c.severity)},
           {"title", c.title},
           {"placement_before", c.placement_before},
           {"placement_after", c.placement_after},
           {"share_metric", c.share_metric},
           {"share_before_pct", opt(c.share_before)},
           {"share_after_pct", opt(c.share_after)},
           {"confirmed", confirmed(c)},
           {"missing", c.missing_other_side}};
    j["values"] = json::array();
    for (const auto& v : c.values)
        j["values"].push_back({{"name", v.name},
                               {"labels", v.labels},
                               {"before", v.before},
                               {"after", v.after},
                               {"before_value", opt(v.before_value)},
                               {"after_value", opt(v.after_value)},
                               {"unit", v.unit}});
    j["verify"] = json::array();
    if (with_verify)
        for (const auto& v : c.verify)
            j["verify"].push_back({{"before", v.before}, {"after", v.after}, {"result", verify_result(v.outcome)}});
    return j;
}

// "[warning] device: loop0 busy  (test.device_busy on device loop0)"
std::string headline(const FindingChange& c) {
    std::string s = "[" + to_string(c.severity) + "] " + c.layer + ": " + c.title + "  (" + c.rule_id;
    if (!c.instance.empty()) s += " on " + c.instance_key + " " + c.instance;
    return s + ")";
}

void values_text(std::ostringstream& out, const FindingChange& c) {
    if (c.share_before || c.share_after)
        out << "      share" << (c.share_metric.empty() ? "" : " (" + c.share_metric + ")") << ": "
            << pct(c.share_before) << " -> " << pct(c.share_after) << "\n";
    // Changed values one per line; the unchanged ones on one line, so what
    // moved stands out (the JSON keeps every value).
    std::string unchanged;
    for (const auto& v : c.values) {
        const std::string name = v.name + labels_text(v.labels);
        if (v.before == v.after && !v.before.empty())
            unchanged += (unchanged.empty() ? "" : ", ") + name + " " + v.before;
        else
            out << "      " << name << ": " << or_dash(v.before) << " -> " << or_dash(v.after) << "\n";
    }
    if (!unchanged.empty()) out << "      unchanged: " << unchanged << "\n";
}

void section(std::ostringstream& out, const char* name, const std::vector<FindingChange>& list) {
    out << "\n" << name << " (" << list.size() << ")\n";
    if (list.empty()) out << "  none\n";
}

}  // namespace

std::string verify_result(Tri t) {
    switch (t) {
        case Tri::True: return "holds";
        case Tri::False: return "fails";
        case Tri::Unknown: return "not evaluated";
    }
    return "?";
}

std::string render_diff_text(const VerdictDiff& d) {
    std::ostringstream out;
    out << "iodiag diff\n"
        << "  BEFORE " << d.host_before << ", " << format_utc(d.window_before.start_unix) << ", "
        << format_number(d.window_before.duration_s) << " s window\n"
        << "  AFTER  " << d.host_after << ", " << format_utc(d.window_after.start_unix) << ", "
        << format_number(d.window_after.duration_s) << " s window\n";
    if (!d.same_host()) out << "  note: the two bundles come from different hosts\n";
    out << "STATUS " << d.status_before << " -> " << d.status_after << "\n";

    section(out, "RESOLVED", d.resolved);
    for (const auto& c : d.resolved) {
        out << "  " << headline(c) << "\n";
        if (c.other_side == Tri::Unknown)
            out << "      NOT CONFIRMED: gone from AFTER's verdict, but AFTER could not evaluate the rule (missing: "
                << joined(c.missing_other_side) << ")\n";
        values_text(out, c);
        for (const auto& v : c.verify) {
            if (v.after.empty())
                out << "      verify not evaluated on AFTER; as BEFORE printed it: " << v.before << "\n";
            else
                out << "      verify " << verify_result(v.outcome) << ": " << v.after << "\n";
        }
    }
    section(out, "PERSISTING", d.persisting);
    for (const auto& c : d.persisting) {
        out << "  " << headline(c);
        if (c.placement_before != c.placement_after)
            out << "  [" << c.placement_before << " -> " << c.placement_after << "]";
        out << "\n";
        values_text(out, c);
    }
    section(out, "NEW", d.appeared);
    for (const auto& c : d.appeared) {
        out << "  " << headline(c) << "\n";
        if (c.other_side == Tri::Unknown)
            out << "      BEFORE could not evaluate this rule (missing: " << joined(c.missing_other_side)
                << "): it may have been there unobserved\n";
        values_text(out, c);
    }
    out << "\nNVME SMART (" << d.smart.size() << " change" << (d.smart.size() == 1 ? "" : "s") << ")\n";
    if (d.smart.empty()) out << "  no counter grew (or no NVMe SMART log in both bundles)\n";
    for (const auto& s : d.smart) {
        out << "  " << s.device;
        if (!s.serial.empty()) out << " (serial " << s.serial << ")";
        out << ": " << s.field << " " << or_dash(s.before) << " -> " << or_dash(s.after);
        if (!s.delta.empty()) out << " (+" << s.delta << ")";
        out << ": " << s.meaning << "\n";
    }
    out << "\nRESULT " << (d.got_worse() ? "worse" : "nothing got worse") << ": " << d.resolved.size()
        << " resolved, " << d.persisting.size() << " persisting, " << d.appeared.size() << " new, "
        << d.smart.size() << " SMART change(s)\n";
    return out.str();
}

json render_diff_json(const VerdictDiff& d) {
    json j;
    j["schema"] = "iodiag-diff";
    j["schema_version"] = VerdictDiff::kSchemaVersion;
    j["before"] = side_json(d.host_before, d.window_before, d.status_before, d.fingerprint_before);
    j["after"] = side_json(d.host_after, d.window_after, d.status_after, d.fingerprint_after);
    j["same_host"] = d.same_host();
    j["status_before"] = d.status_before;
    j["status_after"] = d.status_after;
    j["got_worse"] = d.got_worse();
    j["resolved"] = json::array();
    for (const auto& c : d.resolved) j["resolved"].push_back(change_json(c, true));
    j["persisting"] = json::array();
    for (const auto& c : d.persisting) j["persisting"].push_back(change_json(c, false));
    j["new"] = json::array();
    for (const auto& c : d.appeared) j["new"].push_back(change_json(c, false));
    j["smart"] = json::array();
    for (const auto& s : d.smart)
        j["smart"].push_back({{"device", s.device},
                              {"serial", s.serial},
                              {"field", s.field},
                              {"before", s.before},
                              {"after", s.after},
                              {"delta", s.delta},
                              {"meaning", s.meaning}});
    return j;
}

}  // namespace iodiag
