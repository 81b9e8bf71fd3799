// What the kernel's verifier spent on the programs of a loaded BPF object.
//
// Every `iodiag` run loads its collectors' programs again, and the verifier's
// work is most of that load's CPU time that iodiag's own code decides (a loop
// whose counter the verifier must follow value by value multiplied one
// program's work by four). `-v` prints it per collector, so that a change
// that makes the start slower shows which program it made harder to verify.
#pragma once

#include <string>

struct bpf_object;

namespace iodiag {

// "on_switch 13699, sys_exit 10840, ..." (instructions the verifier
// processed, bpf_prog_info.verified_insns, most first), for the object's
// loaded programs; empty when the kernel does not report it (before 5.16).
std::string verified_instructions(bpf_object* obj);

}  // namespace iodiag
