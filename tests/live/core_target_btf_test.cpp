// libbpf relocates each of the project's BPF objects against the cut-down
// kernel BTF (collectors/bpf/core_target_btf.hpp) exactly as against the
// machine's whole BTF: every CO-RE relocation's patched instruction, as
// libbpf's debug log states it, is the same both ways. Needs root and kernel BTF.
#include <gtest/gtest.h>

#include <bpf/libbpf.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "collectors/bpf/core_target_btf.hpp"
#include "collectors/text_file.hpp"
#include "live_support.hpp"

namespace iodiag {
namespace {

std::vector<std::string>* g_relocation_lines = nullptr;

// libbpf states each relocation's outcome in one line: "prog 'p': relo #3:
// patched insn #12 (LDX/ST/STX) off 208 -> 208", or that it poisoned the
// instruction (no candidate matched); lines naming candidates carry type ids,
// which the cut-down BTF renumbers, and are left out.
int keep_outcomes(enum libbpf_print_level, const char* fmt, va_list args) {
    char line[1024];
    vsnprintf(line, sizeof line, fmt, args);
    const std::string s(line);
    auto has = [&s](const char* what) { return s.find(what) != std::string::npos; };
    const bool outcome = has("patched insn") || has("poison") || has("substituting insn") || (has("relo #") && has("failed"));
    if (g_relocation_lines && outcome) g_relocation_lines->push_back(s);
    return 0;
}

// The relocation outcomes of loading the object (every program, as the ELF
// marks them; whether the load then succeeds does not matter: libbpf
// relocates all of them before it loads any).
std::vector<std::string> relocations(const void* elf, size_t size, const char* target_path) {
    std::vector<std::string> lines;
    g_relocation_lines = &lines;
    const libbpf_print_fn_t previous = libbpf_set_print(keep_outcomes);
    LIBBPF_OPTS(bpf_object_open_opts, opts, .btf_custom_path = target_path);
    bpf_object* obj = bpf_object__open_mem(elf, size, &opts);
    EXPECT_TRUE(obj);
    if (obj) {
        bpf_object__load(obj);
        bpf_object__close(obj);
    }
    libbpf_set_print(previous);
    g_relocation_lines = nullptr;
    return lines;
}

// The built object's ELF image (the bytes its skeleton embeds), loaded with
// the whole kernel BTF and with the cut-down one.
void expect_same_relocations(const char* name) {
    const std::string elf = read_text_file(std::string(IODIAG_BPF_OBJECTS) + "/" + name);   // throws, naming the path
    const CoreTargetFile target(name, elf);
    ASSERT_TRUE(target.path()) << name << ": no cut-down BTF: " << target.why();
    const auto whole = relocations(elf.data(), elf.size(), nullptr);
    const auto cut = relocations(elf.data(), elf.size(), target.path());
    EXPECT_GT(whole.size(), 10u) << name << ": libbpf logged no relocation";
    EXPECT_EQ(whole, cut) << name;
}

class CoreTargetBtfLive : public ::testing::Test {
protected:
    void SetUp() override {
        IODIAG_LIVE_REQUIRE(live::missing_root());
        if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) GTEST_SKIP() << "no kernel BTF (/sys/kernel/btf/vmlinux)";
    }
};

TEST_F(CoreTargetBtfLive, SyscallObjectRelocatesAlike) {
    expect_same_relocations("syscall.bpf.o");
}

TEST_F(CoreTargetBtfLive, BlockObjectRelocatesAlike) {
    expect_same_relocations("block.bpf.o");
}

TEST_F(CoreTargetBtfLive, IouringObjectRelocatesAlike) {
    expect_same_relocations("iouring.bpf.o");
}

}  // namespace
}  // namespace iodiag
