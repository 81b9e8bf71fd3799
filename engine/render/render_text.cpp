#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <sstream>

#include "engine/evidence/format.hpp"
#include "engine/render/cgroup_shown.hpp"
#include "engine/triage/judgement.hpp"
#include "engine/render/exemplar_parts.hpp"
#include "engine/render/render.hpp"

namespace iodiag {

namespace {

std::string pct_or_dash(const std::optional<double>& v) {
    return v ? format_number(*v) + " %" : "-";
}

// 1204 -> "1,204"
std::string with_thousands(uint64_t n) {
    std::string s = std::to_string(n);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

std::string labels_text(const Labels& l) {
    if (l.empty()) return "";
    std::string s = "{";
    for (const auto& [k, v] : l) s += (s.size() > 1 ? "," : "") + k + "=" + v;
    return s + "}";
}

// "syscall{comm=fio,...}: total 26.8 ms = dirty 21.5 ms + cpu 4 ms [bytes 4096, offset 0]"
// The parts are the exemplar's measured intervals (keys ending in _us), largest first.
std::string exemplar_line(const Verdict& v, const Exemplar& e) {
    const auto [total, parts, other] = split_exemplar(e);
    std::string line = e.kind + labels_text(named_labels(v, e.labels)) + ": total " + format_value(total, e.unit);
    for (size_t i = 0; i < parts.size(); ++i)
        line += std::string(i ? " + " : " = ") + parts[i].second + " " + format_value(parts[i].first, e.unit);
    if (!other.empty()) line += " [" + other + "]";
    return line;
}

// bcc-style: one row per bucket from the first to the last non-empty one.
void render_distribution(std::ostringstream& out, const Verdict& v, const HistogramMetric& h) {
    const auto& b = h.hist.buckets();
    const uint64_t peak = *std::max_element(b.begin(), b.end());
    size_t first = 0;
    while (first < b.size() && b[first] == 0) ++first;
    const auto p50 = h.hist.percentile(50), p99 = h.hist.percentile(99), p999 = h.hist.percentile(99.9);
    out << "  " << h.name << labels_text(named_labels(v, h.labels)) << ": n " << h.hist.total() << ", p50 "
        << format_value(p50.value, h.unit) << ", p99 " << format_value(p99.value, h.unit) << ", p99.9 " << format_value(p999.value, h.unit)
        << " (within their log2 bucket)\n";
    for (size_t i = first; i < b.size(); ++i) {
        char row[96];
        std::snprintf(row, sizeof row, "    %10llu -> %-10llu : %-9llu |",
                      static_cast<unsigned long long>(Log2Histogram::bucket_lo(static_cast<int>(i))),
                      static_cast<unsigned long long>(Log2Histogram::bucket_hi(static_cast<int>(i))),
                      static_cast<unsigned long long>(b[i]));
        const size_t stars = peak ? static_cast<size_t>((b[i] * 30 + peak - 1) / peak) : 0;
        out << row << std::string(stars, '*') << std::string(30 - stars, ' ') << "|\n";
    }
}

// Each distinct provenance once: evidence lines cite "[n]", the legend says
// what n is (a tracepoint, a file, a formula...).
struct SourceLegend {
    std::vector<std::string> sources;
    std::map<std::string, size_t> index;
    size_t ref(const Provenance& p) {
        // Many sources already open with their kind ("derived: ...",
        // "tracepoint:block:..."): print the kind once.
        const std::string text = p.source.rfind(p.kind + ":", 0) == 0 ? p.source : p.kind + ": " + p.source;
        auto [it, fresh] = index.try_emplace(text, sources.size() + 1);
        if (fresh) sources.push_back(text);
        return it->second;
    }
};

// What a finding's share is a share of, in words.
std::string share_basis(const std::string& metric) {
    if (metric.rfind("block.", 0) == 0) return "of its requests' block-layer time";
    if (metric.rfind("cgroup.", 0) == 0) return "of the slow operations' time, spent by this group's tasks";
    return "of the slow operations' time";
}

// The first sentence of a text (up to ". "), for the opening lines.
std::string first_sentence(const std::string& text) {
    const size_t end = text.find(". ");
    return end == std::string::npos ? text : text.substr(0, end + 1);
}

const CitedValue* cited(const Finding& f, const std::string& name) {
    for (const auto& c : f.evidence)
        if (c.name == name) return &c;
    return nullptr;
}

// "app postgres [3]; pid 4242 [4]; ...": every field of the same process,
// each with where it was read from (the legend's [n], or in full with -v).
void render_fields(std::ostringstream& out, const Verdict& v, const std::string& head,
                   const std::vector<WhoField>& fields, SourceLegend* legend) {
    out << head;
    for (size_t i = 0; i < fields.size(); ++i) {
        const WhoField& w = fields[i];
        const std::string what = w.what == "given" ? "victim given by --victim" : w.what;
        out << (i ? "; " : " ") << what << " " << (w.what == "cgroup" ? named(v, w.value) : w.value);
        if (legend) out << " [" << legend->ref({"derived", w.source}) << "]";
    }
    out << "\n";
    if (!legend)
        for (const auto& w : fields) out << "           " << w.what << " from " << w.source << "\n";
}

// Who suffered (the victim) and, where a finding names one, because of whom.
void render_who(std::ostringstream& out, const Verdict& v, SourceLegend* legend) {
    render_fields(out, v, "  Who:    ", v.who_suffered, legend);
    if (!v.caused_by.empty()) render_fields(out, v, "  Because of:", v.caused_by, legend);
}

// What a person on call reads first: what is slow, for whom, why (the chain),
// what to do first. Everything it says is in the findings below.
void render_glance(std::ostringstream& out, const Verdict& v, SourceLegend* legend) {
    const Finding* top = !v.findings.empty() ? &v.findings.front() : (!v.notes.empty() ? &v.notes.front() : nullptr);
    out << "AT A GLANCE\n";
    // Who suffered most is worth a line only when something was wrong: in a
    // healthy window the "slowest" operations are merely the window's p99;
    // or when the operator named the victim: whom the verdict is about.
    const bool given = std::any_of(v.who_suffered.begin(), v.who_suffered.end(),
                                   [](const WhoField& w) { return w.what == "given"; });
    if (!top) {
        out << "  Nothing the applications waited for was abnormal in the observed layers.\n";
        if (given) render_who(out, v, legend);
        return;
    }
    const std::string share =
        top->share_pct ? " (" + format_number(*top->share_pct) + " % " + share_basis(top->share_metric) + ")" : "";
    // A title that states its share already needs no second one.
    out << "  What:    " << top->title << (top->title.find('%') == std::string::npos ? share : "") << "\n";
    if (!v.who_suffered.empty() && (!v.findings.empty() || given)) render_who(out, v, legend);
    std::string why;
    if (const CitedValue* c = cited(*top, "device.stack_chain")) why = "stack " + c->text + ". ";
    if (const CitedValue* c = cited(*top, "device.upper_devices"))
        why = "the time of " + c->text + " (stacked on " + top->instance + ") is spent here. " + why;
    why += first_sentence(top->mechanism);
    out << "  Why:     " << why << "\n";
    for (const auto& fx : v.fixes)
        if (fx.rule_id == top->rule_id && fx.instance == top->instance) {
            out << "  Do first: " << to_string(fx.priority) << " " << fx.action
                << (fx.playbook.empty() ? "" : " (iodiag playbook " + fx.playbook + ")") << "\n";
            break;
        }
    if (v.findings.empty()) {
        for (const auto& f : top->fixes) {
            out << "  Do first: " << to_string(f.priority) << " " << f.action
                << (f.playbook.empty() ? "" : " (iodiag playbook " + f.playbook + ")") << "\n";
            break;
        }
    }
    const auto& rest = v.findings.empty() ? v.notes : v.findings;
    for (size_t i = 1; i < rest.size() && i < 3; ++i)
        out << "  Also:    " << rest[i].title
            << (rest[i].share_pct ? " (" + format_number(*rest[i].share_pct) + " %" + whose_share(rest[i]) + ")"
                                  : std::string(""))
            << "\n";
}

void render_finding(std::ostringstream& out, const Verdict& v, size_t n, const Finding& f, SourceLegend* legend,
                    bool note = false) {
    out << " " << n << ". [" << (note ? note_tag(f) : upper_case(to_string(f.severity))) << "] " << f.title << "\n";
    out << "    layer " << f.layer << " · rule " << f.rule_id << " (" << f.source << ")"
        << " · share "
        << (f.share_pct ? format_number(*f.share_pct) + " %" + whose_share(f) + " (measured: " + f.share_metric + ")"
                        : std::string("not measured"))
        << " · confidence " << format_number(f.confidence) << "\n";
    out << "    why: " << f.mechanism << "\n";
    if (!f.evidence.empty()) out << "    evidence:\n";
    for (const auto& c : f.evidence) {
        out << "      " << c.name << labels_text(named_labels(v, c.labels)) << " = "
            << (!c.formatted.empty() ? c.formatted : format_value(c.value, c.unit));
        if (!c.comparison.empty()) out << "  (" << c.comparison << ")";
        if (legend)
            out << "  [" << legend->ref(c.provenance) << "]\n";
        else
            out << "  [" << c.provenance.source << "]\n";
    }
    if (!f.folded.empty()) {
        out << "    same cause, folded in:";
        for (const auto& g : f.folded) {   // "rule@instance"
            const size_t at = g.find('@');
            out << " " << (at == std::string::npos ? g : g.substr(0, at) + " on " + named(v, g.substr(at + 1)));
        }
        out << "\n";
    }
    for (const auto& vfy : f.verify) out << "    verify after the fix: " << vfy << "\n";
}

// Every rule not evaluated with -v; else those on devices and cgroups that
// did I/O in the window (and global rules), the rest as a count.
void render_not_evaluated(std::ostringstream& out, const Verdict& v, bool verbose) {
    const auto& lines = verbose ? v.not_evaluated : v.not_evaluated_active;
    if (lines.empty() && (verbose || v.not_evaluated_idle == 0)) return;
    out << "RULES NOT EVALUATED (their evidence is missing)\n";
    for (const auto& n : lines) out << "  " << n << "\n";
    if (!verbose && v.not_evaluated_idle)
        out << "  " << v.not_evaluated_idle
            << " more on devices and cgroups that did no I/O in the window, or with no evidence at all (-v lists them)\n";
}

}  // namespace

std::string render_text(const Verdict& v, const TextOptions& options) {
    SourceLegend legend_store;
    SourceLegend* legend = options.verbose ? nullptr : &legend_store;
    std::ostringstream out;
    out << "iodiag verdict — host " << v.host << ", kernel " << v.kernel << ", window "
        << format_number(v.window.duration_s) << " s from " << format_utc(v.window.start_unix) << "\n";
    const std::string status = upper_case(status_word(v));
    size_t observed = 0;
    for (const auto& r : v.layers) observed += r.state != LayerState::NotObserved;
    out << "STATUS: " << status << " — " << v.findings.size() << " finding(s); latency observed in "
        << observed << " of " << v.layers.size() << " layers";
    if (observed < v.layers.size()) out << " (unobserved layers are unknown, not healthy)";
    out << "\n";
    if (!v.blind.empty() && v.findings.empty()) out << "  UNKNOWN because " << v.blind << "\n";
    render_glance(out, v, legend);
    out << "\n";

    out << "WHERE THE TIME GOES (bottom-up)\n";
    out << "  " << pad("layer", 12) << pad("state", 14) << pad("share slow", 11) << pad("share all", 10) << "figures\n";
    std::map<std::string, std::vector<std::string>> basis_layers;   // what a share is a share of -> layers
    for (const auto& r : v.layers) {
        out << "  " << pad(r.layer, 12) << pad(r.state == LayerState::Abnormal ? "ABNORMAL" : to_string(r.state), 14)
            << pad(pct_or_dash(r.share_slow_pct), 11) << pad(pct_or_dash(r.share_all_pct), 10)
            << (r.figures.empty() ? (r.state == LayerState::NotObserved ? r.observed_by : "") : r.figures) << "\n";
        if (!r.share_basis.empty()) basis_layers[r.share_basis].push_back(r.layer);
    }
    for (const auto& [basis, layers] : basis_layers) {
        out << "  shares " << basis;
        if (basis_layers.size() > 1) {
            out << " (";
            for (size_t i = 0; i < layers.size(); ++i) out << (i ? ", " : "") << layers[i];
            out << ")";
        }
        out << "\n";
    }
    out << "\n";

    if (v.findings.empty()) {
        out << "FINDINGS: none in the observed layers.\n\n";
    } else {
        out << "FINDINGS (ranked by latency share x confidence)\n";
        for (size_t i = 0; i < v.findings.size(); ++i) render_finding(out, v, i + 1, v.findings[i], legend);
        out << "\n";
        out << "FIXES, in order (share of latency first, then P0..P5)\n";
        for (size_t i = 0; i < v.fixes.size(); ++i) {
            const auto& fx = v.fixes[i];
            out << " " << i + 1 << ". " << to_string(fx.priority) << " " << fx.action << "\n      for "
                << fx.rule_id << (fx.instance.empty() ? "" : " on " + named(v, fx.instance));
            if (!fx.playbook.empty()) out << " · steps: iodiag playbook " << fx.playbook;
            out << "\n";
        }
        out << "\n";
    }
    if (!v.notes.empty()) {
        out << "NOTES\n";
        for (size_t i = 0; i < v.notes.size(); ++i) render_finding(out, v, i + 1, v.notes[i], legend, true);
        out << "\n";
    }
    if (legend && !legend->sources.empty()) {
        out << "SOURCES of the evidence above ([n]; -v prints them on every line)\n";
        for (size_t i = 0; i < legend->sources.size(); ++i) out << "  [" << i + 1 << "] " << legend->sources[i] << "\n";
        out << "\n";
    }

    if (!v.distributions.empty()) {
        out << "LATENCY DISTRIBUTIONS (log2 buckets; the shape tells hits from misses and bursts from queues)\n";
        for (const auto& h : v.distributions) render_distribution(out, v, h);
        out << "\n";
    }
    if (!v.slowest.empty()) {
        out << "SLOWEST OPERATIONS (each part measured)\n";
        for (const auto& e : v.slowest) out << "  " << exemplar_line(v, e) << "\n";
        out << "\n";
    }

    out << "HOW THIS WAS REACHED (decision graph, bottom-up, seed 000 §8.7)\n";
    for (const auto& s : v.trail) {
        out << "  " << s.layer << ": " << to_string(s.state);
        if (!s.summary.empty()) out << " — " << s.summary;
        out << "\n";
        if (!s.next.empty()) out << "      -> " << s.next << "\n";
    }
    out << "\n";

    out << "COLLECTORS\n";
    for (const auto& c : v.collectors)
        out << "  " << pad(c.name, 20) << (c.available ? "available" : "UNAVAILABLE") << (c.reason.empty() ? "" : ": " + c.reason)
            << "\n";
    if (!v.lost_events.empty()) {
        out << "LOST EVENTS (seen but not accounted; what stays complete)\n";
        for (const auto& l : v.lost_events)
            out << "  " << l.collector << " " << l.what << ": " << with_thousands(l.count) << " lost"
                << (l.complete.empty() ? "" : "; " + l.complete) << "\n";
    }
    render_not_evaluated(out, v, options.verbose);
    out << "fingerprint " << v.fingerprint << "\n";
    return out.str();
}

}  // namespace iodiag
