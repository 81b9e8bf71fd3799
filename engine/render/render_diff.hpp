// Renderers of a VerdictDiff (`iodiag diff`): text for a terminal and JSON.
//
// JSON schema "iodiag-diff", schema_version 1 (fields are only ever added):
//   schema, schema_version
//   before, after:  {host, window: {start_unix, duration_s}, status, fingerprint}
//   same_host:      bool (false: the bundles come from different machines)
//   status_before, status_after: "ok" | "warning" | "critical"
//   got_worse:      bool (new finding above info, worse status, or SMART growth;
//                   `iodiag diff` exits 1 then)
//   resolved[], persisting[], new[]: one object per finding, keyed by
//     {rule_id, instance}:
//     rule_id, instance_key, instance, layer, severity, title,
//     placement_before, placement_after: "finding" | "note" | "" (absent),
//     share_metric, share_before_pct, share_after_pct (null when not measured),
//     values[]: {name, labels, before, after (formatted, "" when absent),
//                before_value, after_value (numbers or null), unit},
//     confirmed: resolved: the rule was evaluated on AFTER and is False;
//                new: it was evaluated on BEFORE and was False; persisting: true,
//     missing[]: why it could not be evaluated on the other side,
//     verify[]: resolved only: {before, after, result: "holds" | "fails" |
//               "not evaluated"} (the rule's verify comparisons on AFTER)
//   smart[]: {device, serial, field, before, after, delta, meaning}: NVMe SMART
//     counters that grew (media_errors, unsafe_shutdowns, num_err_log_entries),
//     Critical Warning bits newly set, available spare that fell.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/triage/verdict_diff.hpp"

namespace iodiag {

std::string render_diff_text(const VerdictDiff& d);
// A verify check's outcome on AFTER: "holds", "fails", "not evaluated".
std::string verify_result(Tri t);
nlohmann::json render_diff_json(const VerdictDiff& d);

}  // namespace iodiag
