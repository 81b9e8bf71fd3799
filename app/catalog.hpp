// The catalog rules are checked against: what the collectors can emit plus
// what the engine derives. It lives in the app because it joins the two.
#pragma once

#include "engine/evidence/metric_catalog.hpp"

namespace iodiag {

MetricCatalog full_catalog();

}  // namespace iodiag
