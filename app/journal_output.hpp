// A verdict as one structured journald entry: MESSAGE is the verdict as one
// JSON line (schema iodiag-verdict, as --format json), so a log pipeline that
// reads the journal gets the same document; the fields IODIAG_STATUS,
// IODIAG_FINGERPRINT, IODIAG_TOP_RULE, IODIAG_MODE and MESSAGE_ID make it
// filterable (journalctl MESSAGE_ID=<kVerdictMessageId> IODIAG_STATUS=critical).
#pragma once

#include <string>

#include "engine/triage/verdict.hpp"

namespace iodiag::cli {

// Fixed id of "an iodiag verdict" entries (journalctl MESSAGE_ID=...).
inline constexpr const char* kVerdictMessageId = "14b1698f2b8b483a9ac6fdefbac99274";

// Empty on success, else why the entry was not written (built without
// libsystemd, journald not reachable).
std::string send_verdict_to_journal(const Verdict& v, const std::string& mode);

}  // namespace iodiag::cli
