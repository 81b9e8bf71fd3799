// Playbook files (playbooks/*.yaml): diagnostics with file:line:col, and the
// text `iodiag playbook ID` prints.
#include "engine/rules/playbooks.hpp"
#include "tests/fuzz/fuzz_target.hpp"

IODIAG_FUZZ_TARGET(playbook) {
    using namespace iodiag;
    const PlaybookSet set = load_playbook_from_string(fuzz::text(data, size), "fuzz.yaml");
    for (const auto& d : set.diagnostics)
        if (d.pos.file != "fuzz.yaml") fuzz::fail("diagnostic without the file: " + d.to_string());
    for (const auto& p : set.playbooks) render_playbook(p);
}
