// The kernel's BTF cut down to what one BPF object's CO-RE relocations can
// look at, for libbpf to relocate against (bpf_object_open_opts'
// btf_custom_path) instead of scanning all of the kernel's types once per
// root: in syscall.bpf.o 21 roots x ~125,000 types, ~20 ms of its start,
// the longest of the collectors' starts.
//
// Cut so that libbpf (libbpf.c bpf_core_find_cands, relo_core.c) finds the
// same candidates and computes the same values:
//  - every kernel type whose essential name is a root's, with everything it
//    holds by value (members, array elements, typedef and modifier targets),
//    copied as the kernel has it: field matching walks members and compares
//    the accessed field's type by kind, int encoding, enum name and array
//    element, never through a pointer;
//  - through pointers too from the roots of whole-type relocations, where
//    libbpf's type comparison follows them (until a struct, union, enum or int);
//  - the types whose kernel id a program receives (bpf_core_type_id_kernel)
//    at their own ids: the slots before the last of them hold the other
//    copied types, then anonymous `void *` records nothing can match;
//  - a pointer to a type not copied points to void (pointers match any pointer).
// Not cut (nullopt with why: libbpf then scans the kernel's own BTF): a root
// with no type of its name in vmlinux, which libbpf would look for in the
// modules' BTF; a relocation kind not listed above.
//
//   auto bytes = core_target_btf(view, roots, why);   // raw BTF (Documentation/bpf/btf.rst)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "collectors/bpf/core_relocations.hpp"
#include "collectors/bpf/kernel_btf_view.hpp"

namespace iodiag {

std::optional<std::string> core_target_btf(const KernelBtfView& kernel, const CoreRoots& roots, std::string& why);

// The cut-down BTF of one object in a memory file, for btf_custom_path; no
// path (libbpf scans the kernel's BTF, as without it) when it cannot be
// made, with the reason in why() and the debug log.
//
//   const CoreTargetFile target("syscall_bpf", syscall_bpf__elf_bytes);
//   LIBBPF_OPTS(bpf_object_open_opts, o, .btf_custom_path = target.path());
class CoreTargetFile {
public:
    // `elf_bytes`: the object's skeleton's accessor of its ELF image.
    CoreTargetFile(const char* object, const void* (*elf_bytes)(size_t*));
    // The object's ELF image itself (which must outlive the constructor).
    CoreTargetFile(const char* object, std::string_view elf);
    ~CoreTargetFile();
    CoreTargetFile(const CoreTargetFile&) = delete;
    CoreTargetFile& operator=(const CoreTargetFile&) = delete;
    const char* path() const { return fd_ < 0 ? nullptr : path_.c_str(); }
    const std::string& why() const { return why_; }

private:
    void make(std::string_view elf);
    int fd_ = -1;
    std::string path_, why_;
};

}  // namespace iodiag
