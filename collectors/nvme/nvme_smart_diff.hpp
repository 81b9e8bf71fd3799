// Compares the NVMe SMART evidence of two bundles (before / after a fix, or
// yesterday / today) and lists what got worse: media errors, unsafe shutdowns
// and error-log entries that grew, Critical Warning bits newly set, spare that
// fell. The lead's `iodiag diff` calls this.
#pragma once

#include <string>
#include <vector>

#include "engine/evidence/evidence.hpp"

namespace iodiag::nvme {

struct SmartChange {
    std::string device;    // namespace block device, e.g. "nvme0n1"
    std::string serial;    // controller serial when known (how devices were matched)
    std::string field;     // nvme-cli name, e.g. "media_errors"
    std::string before;    // exact value (128-bit counters as decimal)
    std::string after;
    std::string delta;     // exact growth for counters, "" for other fields
    std::string meaning;   // why it matters, in plain words
};

// Devices are matched by controller serial when both bundles have it (a
// device can be renamed across reboots), else by device name.
std::vector<SmartChange> compare_smart(const Evidence& before, const Evidence& after);

}  // namespace iodiag::nvme
