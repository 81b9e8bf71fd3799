// analyze(): Evidence + rules -> Verdict. The one path both a live diagnosis
// and a replay take, so the same evidence always gives the same verdict.
#pragma once

#include "engine/evidence.hpp"
#include "engine/rules.hpp"
#include "engine/verdict.hpp"

namespace iodiag {

Verdict analyze(const Evidence& evidence, const RuleSet& rules);

}  // namespace iodiag
