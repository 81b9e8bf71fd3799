// `iodiag diff BEFORE.json AFTER.json`: what a fix changed. Both bundles are
// analysed with the same (current) rules; the findings resolved, persisting and
// new, the status before -> after, each resolved finding's verify comparisons
// on AFTER, and NVMe SMART counters that grew between the two bundles.
// Exit: 0 nothing got worse, 1 something did, 3 unreadable input or rules.
#pragma once

#include <vector>

#include <CLI/CLI.hpp>

#include "engine/evidence/evidence.hpp"
#include "engine/triage/verdict_diff.hpp"

namespace iodiag::cli {

// NVMe SMART counters that grew between two bundles (also `iodiag report
// BEFORE AFTER`).
std::vector<SmartGrowth> smart_growth(const Evidence& before, const Evidence& after);

void add_diff_command(CLI::App& app);

}  // namespace iodiag::cli
