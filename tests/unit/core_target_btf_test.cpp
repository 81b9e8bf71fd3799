// The cut-down kernel BTF libbpf relocates against (collectors/bpf/core_target_btf.hpp)
// built from a small "kernel" BTF, and the CO-RE roots read from the project's
// own BPF objects (collectors/bpf/core_relocations.hpp). That libbpf computes
// the same relocations against it as against the machine's whole BTF is
// checked live (tests/live/core_target_btf_test.cpp).
#include <gtest/gtest.h>

#include <bpf/btf.h>

#include <memory>
#include <string>

#include "collectors/bpf/core_relocations.hpp"
#include "collectors/bpf/core_target_btf.hpp"
#include "collectors/bpf/kernel_btf_view.hpp"
#include "collectors/text_file.hpp"

namespace iodiag {
namespace {

struct CutBtfFree {
    void operator()(btf* b) const { btf__free(b); }
};
using CutBtfPtr = std::unique_ptr<btf, CutBtfFree>;

// A stand-in kernel:
//   1 int, 2 long, 3 struct other { int x; }, 4 struct other *,
//   5 struct inner { long a; struct other *p; }, 6 struct inner[2],
//   7 typedef struct inner inner_t,
//   8 struct task { int pid; inner_t in; struct inner arr[2]; struct other *o; },
//   9 enum ids { ID_A = 1, ID_B = 7 }, 10 struct file { int mode; }
struct CoreFakeKernel {
    CutBtfPtr b{btf__new_empty()};
    std::string bytes;
    CoreFakeKernel() {
        btf* k = b.get();
        btf__add_int(k, "int", 4, BTF_INT_SIGNED);
        btf__add_int(k, "long", 8, BTF_INT_SIGNED);
        btf__add_struct(k, "other", 4);
        btf__add_field(k, "x", 1, 0, 0);
        btf__add_ptr(k, 3);
        btf__add_struct(k, "inner", 16);
        btf__add_field(k, "a", 2, 0, 0);
        btf__add_field(k, "p", 4, 64, 0);
        btf__add_array(k, 1, 5, 2);
        btf__add_typedef(k, "inner_t", 5);
        btf__add_struct(k, "task", 64);
        btf__add_field(k, "pid", 1, 0, 0);
        btf__add_field(k, "in", 7, 64, 0);
        btf__add_field(k, "arr", 6, 192, 0);
        btf__add_field(k, "o", 4, 448, 0);
        btf__add_enum(k, "ids", 4);
        btf__add_enum_value(k, "ID_A", 1);
        btf__add_enum_value(k, "ID_B", 7);
        btf__add_struct(k, "file", 4);
        btf__add_field(k, "mode", 1, 0, 0);
        uint32_t size = 0;
        const void* raw = btf__raw_data(k, &size);
        bytes.assign(static_cast<const char*>(raw), size);
    }
    KernelBtfView view() const {
        std::string why;
        auto v = KernelBtfView::of(bytes, why);
        EXPECT_TRUE(v) << why;
        return *v;
    }
};

CutBtfPtr cut_down(const CoreFakeKernel& k, const CoreRoots& roots, std::string& why) {
    auto bytes = core_target_btf(k.view(), roots, why);
    if (!bytes) return nullptr;
    CutBtfPtr parsed(btf__new(bytes->data(), static_cast<uint32_t>(bytes->size())));
    EXPECT_TRUE(parsed) << "libbpf does not parse the cut-down BTF";
    return parsed;
}

TEST(CoreEssentialName, DropsTheLastFlavourAsLibbpfDoes) {
    EXPECT_EQ(core_essential_name("task_struct"), "task_struct");
    EXPECT_EQ(core_essential_name("task_struct___old"), "task_struct");
    EXPECT_EQ(core_essential_name("a___b___c"), "a___b");
    EXPECT_EQ(core_essential_name("x____y"), "x____y");   // four underscores: no X___Y
    EXPECT_EQ(core_essential_name("__x___y"), "__x");
    EXPECT_EQ(core_essential_name("a___"), "a___");
    EXPECT_EQ(core_essential_name(""), "");
}

TEST(CoreTargetBtf, CopiesRootsWithWhatTheyHoldAndPointersToVoid) {
    CoreFakeKernel k;
    CoreRoots roots;
    roots.names = {"task"};
    std::string why;
    CutBtfPtr b = cut_down(k, roots, why);
    ASSERT_TRUE(b) << why;
    const int task = btf__find_by_name_kind(b.get(), "task", BTF_KIND_STRUCT);
    ASSERT_GT(task, 0);
    const btf_type* t = btf__type_by_id(b.get(), task);
    ASSERT_EQ(btf_vlen(t), 4u);
    const btf_member* m = btf_members(t);
    EXPECT_STREQ(btf__name_by_offset(b.get(), m[1].name_off), "in");
    EXPECT_EQ(btf_member_bit_offset(t, 2), 192u);
    // Held by value: the typedef, the embedded struct and the array's element.
    EXPECT_GT(btf__find_by_name_kind(b.get(), "inner_t", BTF_KIND_TYPEDEF), 0);
    EXPECT_GT(btf__find_by_name_kind(b.get(), "inner", BTF_KIND_STRUCT), 0);
    EXPECT_EQ(btf__resolve_size(b.get(), m[2].type), 32);
    // Behind a pointer only: not copied, the pointer points to void.
    EXPECT_LT(btf__find_by_name_kind(b.get(), "other", BTF_KIND_STRUCT), 0);
    const btf_type* o = btf__type_by_id(b.get(), m[3].type);
    ASSERT_TRUE(btf_is_ptr(o));
    EXPECT_EQ(o->type, 0u);
    // Types no root names are not there.
    EXPECT_LT(btf__find_by_name_kind(b.get(), "file", BTF_KIND_STRUCT), 0);
    EXPECT_LT(btf__find_by_name_kind(b.get(), "ids", BTF_KIND_ENUM), 0);
}

TEST(CoreTargetBtf, KeepsTheKernelIdOfTypesWhoseIdProgramsReceive) {
    CoreFakeKernel k;
    CoreRoots roots;
    roots.names = {"file", "ids", "task"};
    roots.type_names = {"file"};
    roots.id_names = {"file"};
    std::string why;
    CutBtfPtr b = cut_down(k, roots, why);
    ASSERT_TRUE(b) << why;
    EXPECT_EQ(btf__find_by_name_kind(b.get(), "file", BTF_KIND_STRUCT), 10);
    const int ids = btf__find_by_name_kind(b.get(), "ids", BTF_KIND_ENUM);
    ASSERT_GT(ids, 0);
    EXPECT_EQ(btf_vlen(btf__type_by_id(b.get(), ids)), 2u);
    EXPECT_EQ(btf_enum(btf__type_by_id(b.get(), ids))[1].val, 7);
    // Every slot before it holds a copied type or an anonymous placeholder.
    for (int id = 1; id < 10; ++id) {
        const btf_type* t = btf__type_by_id(b.get(), id);
        ASSERT_TRUE(t);
        if (btf_is_ptr(t) && t->name_off == 0) continue;
        EXPECT_NE(btf__name_by_offset(b.get(), t->name_off), nullptr);
    }
}

TEST(CoreTargetBtf, FollowsPointersFromWholeTypeRootsUntilLibbpfStopsComparing) {
    CoreFakeKernel k;
    btf* kb = k.b.get();
    // 11 typedef struct other *other_ptr (a whole-type root that is a pointer)
    btf__add_typedef(kb, "other_ptr", 4);
    uint32_t size = 0;
    const void* raw = btf__raw_data(kb, &size);
    k.bytes.assign(static_cast<const char*>(raw), size);
    CoreRoots roots;
    roots.names = roots.type_names = {"other_ptr"};
    std::string why;
    CutBtfPtr b = cut_down(k, roots, why);
    ASSERT_TRUE(b) << why;
    const int td = btf__find_by_name_kind(b.get(), "other_ptr", BTF_KIND_TYPEDEF);
    ASSERT_GT(td, 0);
    const btf_type* p = btf__type_by_id(b.get(), btf__type_by_id(b.get(), td)->type);
    ASSERT_TRUE(btf_is_ptr(p));
    EXPECT_EQ(p->type, static_cast<uint32_t>(btf__find_by_name_kind(b.get(), "other", BTF_KIND_STRUCT)));
}

TEST(CoreTargetBtf, RefusesARootTheKernelBtfLacks) {
    CoreFakeKernel k;
    CoreRoots roots;
    roots.names = {"task", "xfs_inode"};
    std::string why;
    EXPECT_FALSE(core_target_btf(k.view(), roots, why));
    EXPECT_NE(why.find("xfs_inode"), std::string::npos) << why;
    roots.names = {"task"};
    roots.unknown_kind = true;
    EXPECT_FALSE(core_target_btf(k.view(), roots, why));
}

// A built BPF object's ELF image (the bytes its skeleton embeds); an
// unreadable file throws, naming its path.
std::string bpf_object_image(const std::string& name) {
    return read_text_file(std::string(IODIAG_BPF_OBJECTS) + "/" + name);
}

TEST(CoreRelocationRoots, ReadsTheProjectsObjects) {
    std::string why;
    std::string elf = bpf_object_image("syscall.bpf.o");
    auto roots = core_relocation_roots(elf.data(), elf.size(), why);
    ASSERT_TRUE(roots) << why;
    EXPECT_TRUE(roots->names.count("task_struct"));
    EXPECT_TRUE(roots->id_names.count("file"));   // KCAST(f, struct file)
    EXPECT_TRUE(roots->names.count("cgroup_subsys_id"));
    EXPECT_FALSE(roots->type_names.count("cgroup_subsys_id"));   // an enumerator's value
    EXPECT_FALSE(roots->unknown_kind);
    elf = bpf_object_image("block.bpf.o");
    roots = core_relocation_roots(elf.data(), elf.size(), why);
    ASSERT_TRUE(roots) << why;
    EXPECT_TRUE(roots->names.count("request"));
    elf = bpf_object_image("iouring.bpf.o");
    roots = core_relocation_roots(elf.data(), elf.size(), why);
    ASSERT_TRUE(roots) << why;
    EXPECT_TRUE(roots->id_names.count("io_kiocb"));
}

TEST(CoreRelocationRoots, RefusesWhatIsNotAnElfObject) {
    std::string why;
    const std::string junk = "not an object";
    EXPECT_FALSE(core_relocation_roots(junk.data(), junk.size(), why));
    EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace iodiag
