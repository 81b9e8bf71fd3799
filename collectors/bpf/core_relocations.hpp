// Which kernel types a BPF object's CO-RE relocations look up: the root type
// of every relocation, read from the object's own ELF bytes (its .BTF section
// names the types, its .BTF.ext section lists the relocations; both formats
// in the kernel's Documentation/bpf/btf.rst, "BTF ext" and bpf_core_relo in
// linux/bpf.h). libbpf 1.1 answers each root by scanning all of the kernel's
// types (~125,000 here, ~1 ms a scan, 21 roots in syscall.bpf.o); knowing
// the roots lets core_target_btf.hpp hand it a BTF that holds only theirs.
//
//   std::string why;
//   auto roots = core_relocation_roots(elf, elf_size, why);   // nullopt: why
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace iodiag {

// A type name without its CO-RE flavour ("task_struct___old" -> "task_struct"),
// as libbpf matches a local type with the kernel's.
std::string_view core_essential_name(std::string_view name);

struct CoreRoots {
    // Essential names (a "___flavour" suffix removed, as libbpf matches them)
    // of every relocation's root type.
    std::set<std::string, std::less<>> names;
    // Those of relocations that resolve a type as a whole (its kernel id,
    // existence or size) rather than a field or an enumerator: libbpf
    // compares such a type with its candidates through pointers too.
    std::set<std::string, std::less<>> type_names;
    // Those whose kernel type id the program receives (bpf_core_type_id_kernel):
    // the id must be the running kernel's own.
    std::set<std::string, std::less<>> id_names;
    // A relocation kind this reader does not know how libbpf matches (a type
    // match, or newer): then no cut-down BTF may stand in for the kernel's.
    bool unknown_kind = false;
};

// The CO-RE roots of the BPF object whose ELF image is `elf`; empty sets when
// it has no CO-RE relocation; nullopt with `why` when the image or its BTF
// sections cannot be read.
std::optional<CoreRoots> core_relocation_roots(const void* elf, size_t size, std::string& why);

}  // namespace iodiag
