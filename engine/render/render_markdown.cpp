// The verdict as a ticket body (GitHub-flavoured Markdown): a one-line summary
// a ticket title can be cut from, who suffered, where the time went, how the
// decision-graph walk reached its conclusion, the top findings with the evidence they cite,
// the fixes in order with their playbooks, and how to verify them. Everything
// is read from the verdict; nothing here decides.
#include <sstream>

#include "engine/evidence/format.hpp"
#include "engine/render/cgroup_shown.hpp"
#include "engine/triage/judgement.hpp"
#include "engine/render/render.hpp"

namespace iodiag {

namespace {

// Findings shown in full; the rest are listed by title.
constexpr size_t kFullFindings = 5;

// Text from the evidence must not turn into markup: HTML tags, table cell
// separators, line breaks inside a table or a list item.
std::string text(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '|': out += "\\|"; break;
            case '\n':
            case '\r': out += ' '; break;
            default: out += c;
        }
    }
    return out;
}

// An identifier (rule id, metric name, device, playbook) as inline code; a
// backtick inside is replaced, it would end the span.
std::string code(const std::string& s) {
    std::string inner = s;
    for (char& c : inner)
        if (c == '`' || c == '\n' || c == '|') c = '\'';
    return "`" + inner + "`";
}

std::string pct_or_dash(const std::optional<double>& v) { return v ? format_number(*v) + " %" : "-"; }

std::string labels_text(const Labels& l) {
    if (l.empty()) return "";
    std::string s = "{";
    for (const auto& [k, v] : l) s += (s.size() > 1 ? "," : "") + k + "=" + v;
    return s + "}";
}

// An instance as code; a cgroup by its name first, the path as code.
std::string instance(const Verdict& v, const std::string& inst) {
    const std::string name = name_only(v, inst);
    return name == inst ? code(inst) : text(name) + " (" + code(inst) + ")";
}

std::string state_word(const Verdict& v) { return upper_case(status_word(v)); }

void summary_line(std::ostringstream& out, const Verdict& v) {
    out << "**iodiag " << state_word(v) << " on " << text(v.host) << "**: ";
    if (v.findings.empty()) {
        out << "no findings in the observed layers";
    } else {
        const Finding& top = v.findings.front();
        out << text(top.title);
        if (v.findings.size() > 1) out << " (+" << v.findings.size() - 1 << " more)";
    }
    out << "\n\n";
}

void context(std::ostringstream& out, const Verdict& v) {
    size_t observed = 0;
    for (const auto& r : v.layers) observed += r.state != LayerState::NotObserved;
    out << "- Host " << code(v.host) << ", kernel " << code(v.kernel) << ", window "
        << format_number(v.window.duration_s) << " s from " << format_utc(v.window.start_unix) << "\n";
    out << "- Latency observed in " << observed << " of " << v.layers.size() << " layers"
        << (observed < v.layers.size() ? " (unobserved layers are unknown, not healthy)" : "") << "\n";
    out << "- Fingerprint " << code(v.fingerprint)
        << " (same causes on the same host give the same fingerprint: de-duplicate tickets on it)\n\n";
}

void field_rows(std::ostringstream& out, const Verdict& v, const std::vector<WhoField>& fields) {
    out << "| | | from |\n|---|---|---|\n";
    for (const auto& w : fields)
        out << "| " << text(w.what) << " | " << (w.what == "cgroup" ? instance(v, w.value) : code(w.value)) << " | "
            << text(w.source) << " |\n";
    out << "\n";
}

void who_suffered(std::ostringstream& out, const Verdict& v) {
    out << "## Who suffered\n\n";
    if (v.who_suffered.empty()) {
        out << "Not measured (the syscall collector did not run).\n\n";
        return;
    }
    if (v.findings.empty()) out << "Nothing was wrong; these had the slowest operations of the window.\n\n";
    out << "Every row is the same process.\n\n";
    field_rows(out, v, v.who_suffered);
    if (v.caused_by.empty()) return;
    out << "### Because of\n\nThe other program the first finding that names one blames.\n\n";
    field_rows(out, v, v.caused_by);
}

void layer_table(std::ostringstream& out, const Verdict& v) {
    out << "## Where the time went (bottom-up)\n\n";
    out << "| layer | state | share of slow time | share of all time | figures |\n|---|---|---|---|---|\n";
    std::string basis;
    for (const auto& r : v.layers) {
        const std::string state = r.state == LayerState::Abnormal ? "**abnormal**" : to_string(r.state);
        const std::string figures = r.figures.empty() && r.state == LayerState::NotObserved ? r.observed_by : r.figures;
        out << "| " << r.layer << " | " << state << " | " << pct_or_dash(r.share_slow_pct) << " | "
            << pct_or_dash(r.share_all_pct) << " | " << text(figures) << " |\n";
        if (basis.empty() && !r.share_basis.empty()) basis = r.share_basis;
    }
    if (!basis.empty()) out << "\nShares are " << text(basis) << ".\n";
    out << "\n";
}

void trail(std::ostringstream& out, const Verdict& v) {
    out << "## How this was reached\n\nThe decision graph, walked bottom-up (seed 000 §8.7):\n\n";
    for (size_t i = 0; i < v.trail.size(); ++i) {
        const auto& s = v.trail[i];
        out << i + 1 << ". **" << s.layer << "**: " << to_string(s.state);
        if (!s.summary.empty()) out << " — " << text(s.summary);
        if (!s.next.empty()) out << " → " << text(s.next);
        out << "\n";
    }
    out << "\n";
}

void finding(std::ostringstream& out, const Verdict& v, size_t n, const Finding& f) {
    out << "### " << n << ". [" << upper_case(to_string(f.severity)) << "] " << text(f.title) << "\n\n";
    out << "- Layer " << code(f.layer) << ", rule " << code(f.rule_id) << " (" << code(f.source) << ")";
    if (!f.instance.empty()) out << ", " << text(f.instance_key) << " " << instance(v, f.instance);
    out << "\n- Share: "
        << (f.share_pct
                ? format_number(*f.share_pct) + " %" + text(whose_share(f)) + " (measured: " + code(f.share_metric) + ")"
                : std::string("not measured"))
        << ", confidence " << format_number(f.confidence) << "\n";
    out << "- Why: " << text(f.mechanism) << "\n\n";
    if (f.evidence.empty()) return;
    out << "| evidence | value | compared | source |\n|---|---|---|---|\n";
    for (const auto& c : f.evidence)
        out << "| " << code(c.name + labels_text(named_labels(v, c.labels))) << " | "
            << text(!c.formatted.empty() ? c.formatted : format_value(c.value, c.unit)) << " | " << text(c.comparison)
            << " | " << text(c.provenance.kind) << ": " << text(c.provenance.source) << " |\n";
    out << "\n";
}

void findings(std::ostringstream& out, const Verdict& v) {
    out << "## Findings\n\n";
    if (v.findings.empty()) {
        out << "None in the observed layers.\n\n";
        return;
    }
    for (size_t i = 0; i < v.findings.size() && i < kFullFindings; ++i) finding(out, v, i + 1, v.findings[i]);
    if (v.findings.size() > kFullFindings) {
        out << "Also found:\n\n";
        for (size_t i = kFullFindings; i < v.findings.size(); ++i)
            out << "- [" << upper_case(to_string(v.findings[i].severity)) << "] " << text(v.findings[i].title) << " ("
                << code(v.findings[i].rule_id) << ")\n";
        out << "\n";
    }
}

void fixes(std::ostringstream& out, const Verdict& v) {
    if (v.fixes.empty()) return;
    out << "## Fixes, in order\n\nShare of the latency first (Amdahl), then priority P0..P5.\n\n";
    for (size_t i = 0; i < v.fixes.size(); ++i) {
        const auto& fx = v.fixes[i];
        out << i + 1 << ". **" << to_string(fx.priority) << "** " << text(fx.action) << " — for " << code(fx.rule_id)
            << (fx.instance.empty() ? "" : " on " + instance(v, fx.instance));
        if (fx.share_pct) out << " (" << format_number(*fx.share_pct) << " %)";
        if (!fx.playbook.empty()) out << "; playbook " << code(fx.playbook) << ": " << code("iodiag playbook " + fx.playbook);
        out << "\n";
    }
    out << "\n";
}

void verify(std::ostringstream& out, const Verdict& v) {
    if (v.findings.empty()) return;
    out << "## How to verify\n\n"
        << "Record the same load after the fix (" << code("iodiag record -o after.json")
        << ") and compare it with the bundle of this verdict (" << code("iodiag diff before.json after.json")
        << ": resolved findings, and each check below evaluated on the new evidence). After the fix:\n\n";
    for (const auto& f : v.findings) {
        if (f.verify.empty()) {
            out << "- " << code(f.rule_id) << (f.instance.empty() ? "" : " on " + instance(v, f.instance))
                << ": no longer found\n";
            continue;
        }
        for (const auto& line : f.verify)
            out << "- " << code(f.rule_id) << (f.instance.empty() ? "" : " on " + instance(v, f.instance)) << ": "
                << text(line) << "\n";
    }
    out << "\n";
}

void notes(std::ostringstream& out, const Verdict& v) {
    if (v.notes.empty()) return;
    out << "## Notes\n\n";
    for (const auto& f : v.notes)
        out << "- [" << note_tag(f) << "] " << text(f.title) << " (" << code(f.rule_id) << ")\n";
    out << "\n";
}

void collectors(std::ostringstream& out, const Verdict& v) {
    out << "<details><summary>Collectors and rules not evaluated</summary>\n\n";
    out << "| collector | available | note |\n|---|---|---|\n";
    for (const auto& c : v.collectors)
        out << "| " << code(c.name) << " | " << (c.available ? "yes" : "**no**") << " | " << text(c.reason) << " |\n";
    if (!v.not_evaluated.empty()) {
        out << "\nRules not evaluated (their evidence is missing):\n\n";
        for (const auto& n : v.not_evaluated) out << "- " << text(n) << "\n";
    }
    out << "\n</details>\n";
}

}  // namespace

std::string render_markdown(const Verdict& v) {
    std::ostringstream out;
    summary_line(out, v);
    context(out, v);
    who_suffered(out, v);
    layer_table(out, v);
    trail(out, v);
    findings(out, v);
    fixes(out, v);
    verify(out, v);
    notes(out, v);
    collectors(out, v);
    return out.str();
}

}  // namespace iodiag
