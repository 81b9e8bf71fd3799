// `iodiag diff`: what changed between two verdicts (before / after a fix).
//
// Findings are matched by (rule id, instance). A finding of BEFORE that AFTER
// lacks is "resolved" only when its rule was evaluated on AFTER's evidence and
// came out False; when AFTER could not evaluate it (its collector did not run)
// it is listed as resolved but not confirmed: a layer nobody measured is never
// healthy. Renderers: render_diff_text / render_diff_json (engine/render_diff.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

// One cited value on both sides; "" where a side did not have it.
struct ValueChange {
    std::string name;        // e.g. "disk.util_pct" or "block.d2c_us p99"
    Labels labels;
    std::string before;      // formatted with its unit, e.g. "99 %"
    std::string after;
    std::optional<double> before_value;   // numeric values (absent for facts)
    std::optional<double> after_value;
    std::string unit;
};

// A verify comparison of a resolved finding's rule, evaluated on AFTER.
struct VerifyCheck {
    std::string before;   // as the BEFORE verdict printed it: "disk.aqu_sz < 1 (now 12)"
    std::string after;    // the same comparison on AFTER's evidence: "... (now 0.3)";
                          // "" when it could not be evaluated (rule not in the rule set)
    Tri outcome = Tri::Unknown;   // True = holds on AFTER
};

struct FindingChange {
    std::string rule_id;
    std::string instance_key;
    std::string instance;
    std::string layer;
    Severity severity = Severity::Warning;
    std::string title;          // AFTER's title when AFTER has the finding, else BEFORE's
    // "finding" (on the triage path), "note" (info or off the path), "" (absent).
    std::string placement_before;
    std::string placement_after;
    std::string share_metric;   // the rule's share_metric (filled by add_rule_outcomes)
    std::optional<double> share_before;
    std::optional<double> share_after;
    std::vector<ValueChange> values;
    // How the rule came out on the side that lacks the finding: False confirms
    // it is absent there; Unknown means that side could not evaluate it.
    Tri other_side = Tri::Unknown;
    std::vector<std::string> missing_other_side;   // why Unknown
    std::vector<VerifyCheck> verify;               // resolved findings only
};

// One SMART counter that grew, a Critical Warning bit newly set or spare that
// fell (filled by the caller from collectors/nvme/nvme_smart_diff.hpp, which the
// engine library does not link).
struct SmartGrowth {
    std::string device;
    std::string serial;
    std::string field;    // nvme-cli name, e.g. "media_errors"
    std::string before;
    std::string after;
    std::string delta;    // exact growth of counters, "" for other fields
    std::string meaning;
};

struct VerdictDiff {
    static constexpr int kSchemaVersion = 1;
    std::string host_before, host_after;
    Window window_before, window_after;
    std::string status_before, status_after;   // "ok", "info", "warning", "critical"
    std::string fingerprint_before, fingerprint_after;
    std::vector<FindingChange> resolved;
    std::vector<FindingChange> persisting;
    std::vector<FindingChange> appeared;   // "new" in the JSON
    std::vector<SmartGrowth> smart;

    bool same_host() const { return host_before == host_after; }
    // Something got worse: a new finding above info, a worse status, or SMART
    // growth. `iodiag diff` exits 1 then, so scripts can act on it.
    bool got_worse() const;
};

// Pure comparison of two verdicts (the values each finding cites, its share,
// placement and the statuses). Leaves other_side Unknown and verify empty.
VerdictDiff diff_verdicts(const Verdict& before, const Verdict& after);

// Evaluates the rules of resolved findings on the evidence AFTER was judged on
// and of new findings on BEFORE's (Verdict::judged_on: derived metrics
// included): whether the rule came out False there, the values it cites
// there, and for resolved findings each verify comparison on AFTER.
void add_rule_outcomes(VerdictDiff& diff, const RuleSet& rules, const Verdict& before, const Verdict& after);

// analyze() on both sides, diff_verdicts(), add_rule_outcomes(). SMART growth
// is the caller's to add.
VerdictDiff diff_evidence(const Evidence& before, const Evidence& after, const RuleSet& rules);

}  // namespace iodiag
