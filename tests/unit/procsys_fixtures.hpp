// The procfs/sysfs fixture trees the collector tests read (see
// tests/fixtures/procsys/README.md), and the metric lookup they share.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "engine/evidence/evidence.hpp"

namespace iodiag::fixtures {

// Real files from this project's machine, plus crafted devices.
inline const std::string kGuest = std::string(IODIAG_FIXTURES) + "/procsys/guest_6_18";
// Truncated, garbage and empty files.
inline const std::string kBroken = std::string(IODIAG_FIXTURES) + "/procsys/broken";

// A metric's value; a test failure naming it (and -1) when it is absent.
inline double value(const Evidence& ev, const std::string& name, const Labels& labels = {}) {
    const Metric* m = ev.find_metric(name, labels);
    if (!m) ADD_FAILURE() << name << (labels.empty() ? "" : " of " + labels.begin()->second) << " missing";
    return m ? m->value : -1;
}
inline double value(const Evidence& ev, const std::string& name, const std::string& device) {
    return value(ev, name, Labels{{"device", device}});
}

}  // namespace iodiag::fixtures
