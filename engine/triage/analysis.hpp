// analyze(): Evidence + rules -> Verdict. The one path both a live diagnosis
// and a replay take, so the same evidence always gives the same verdict.
#pragma once

#include "engine/evidence/evidence.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

// The verdict keeps the evidence it was judged on (Verdict::judged_on).
Verdict analyze(const Evidence& evidence, const RuleSet& rules);

// The evidence as analyze() judges it: the collected evidence and what
// engine/derive derives from it, as if the application the verdict is about
// suffered most (engine/triage/sufferer_choice.hpp). The one place outside engine/derive that
// derives; for a caller that needs a derived figure before it has a verdict
// (iodiag watch's reference latencies, between captures).
Evidence judged_evidence(const Evidence& collected);

}  // namespace iodiag
