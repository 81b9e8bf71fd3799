// analyze(): Evidence + rules -> Verdict. The one path both a live diagnosis
// and a replay take, so the same evidence always gives the same verdict.
#pragma once

#include "engine/evidence/evidence.hpp"
#include "engine/rules/rules.hpp"
#include "engine/triage/verdict.hpp"

namespace iodiag {

Verdict analyze(const Evidence& evidence, const RuleSet& rules);

}  // namespace iodiag
