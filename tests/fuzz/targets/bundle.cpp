// Evidence bundles (iodiag replay / diff inputs, attached to tickets): parsed,
// validated, and when accepted, written and read back to the same evidence.
#include "engine/evidence/bundle.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(bundle) {
    using namespace iodiag;
    Evidence ev;
    if (!fuzz::rejects_with<BundleError>("", [&] { ev = parse_bundle(fuzz::text(data, size)); })) return;
    fuzz::require_finite(ev);
    const std::string written = bundle_text(ev);
    Evidence again;
    try {
        again = parse_bundle(written);
    } catch (const BundleError& e) {
        fuzz::fail(std::string("an accepted bundle, written again, is rejected: ") + e.what());
    }
    if (bundle_text(again) != written) fuzz::fail("an accepted bundle does not round-trip");
}
