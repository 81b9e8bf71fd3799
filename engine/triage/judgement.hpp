// The judgement model's place in the verdict (docs/judgement.md): the
// invariant that a dominant abnormal layer is named, how a finding that
// explained nothing becomes a note, and when "OK" cannot be said because the
// layers that carry the applications' latency were not observed. What is
// abnormal is decided in engine/derive/layer_judgement.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

// The rule that names a dominant abnormal layer when nothing more specific does.
inline const std::string kDominantLayerRule = "judgement.dominant_layer";

// Whether finding `f` explains time spent in `layer` (its own layer, or a
// chain it stands for: an fsync chain covers the journal and the I/O it
// carries, a device finding the queue and the cache misses it serves).
bool finding_covers(const Finding& f, const std::string& layer);

// Drops the invariant's findings (kDominantLayerRule) whose layer another
// finding of warning or worse already names.
void drop_covered_dominant_layer(std::vector<Finding>& findings);

// A finding whose measured share is a share of the applications' slow time
// and below `felt_pct`: what it describes delayed nobody observed. Returns
// that share, else nullopt. (Block-time shares are judged by the caller
// against the applications' wait on the device.)
std::optional<double> unfelt_share(const Finding& f, const Evidence& ev, double felt_pct);

// Layers the model judged (judge.abnormal): a layer that rules could not judge
// ("not judged") but the model did is normal with the model's reason, so a
// dominant layer is never left "not judged" when its evidence was measured.
// Returns layer -> the model's reason for the layers it judged normal.
std::map<std::string, std::string> model_judged_normal(const Evidence& ev);

// Non-empty when the layers that carry the applications' latency (the
// syscall layer and the block layer) were not observed: then nothing found
// means nothing known, and the status is UNKNOWN, with this reason.
std::string blind_reason(const Evidence& ev);

// The verdict's status word: ok, warning, critical, or unknown (nothing
// found and blind).
std::string status_word(const Verdict& v);

}  // namespace iodiag
