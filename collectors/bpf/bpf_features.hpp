// What this kernel lets a BPF collector do, found by really trying: loading and
// attaching a tiny program, looking at tracefs and BTF, never by comparing kernel
// version numbers (features get backported, and lockdown or a missing config can
// refuse what the version says exists). Collectors take a FeatureProbe& so tests
// can hand them a mock.
//
//   KernelFeatureProbe probe;
//   if (auto why = probe.btf_available(); !why.empty()) -> unavailable(why)
//   AttachMode m = choose_attach_mode(probe, {"block_rq_issue", "block_rq_complete"});
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

struct bpf_program;

namespace iodiag {

class KernelBtfView;

class FeatureProbe {
public:
    virtual ~FeatureProbe() = default;
    // "" when kernel BTF (/sys/kernel/btf/vmlinux) can be read and parsed;
    // otherwise why not (CO-RE programs need it).
    virtual std::string btf_available() = 0;
    // The tracepoint category/name exists (tracefs events/<category>/<name>).
    virtual bool tracepoint_exists(const std::string& category, const std::string& name) = 0;
    // A tp_btf program for this tracepoint (BTF prototype btf_trace_<name>) loads
    // (not attached: a collector that then fails to attach its tp_btf set
    // falls back to raw_tp itself).
    virtual bool tp_btf_loads(const std::string& tracepoint) = 0;
    // A raw_tp program for this tracepoint loads and attaches.
    virtual bool raw_tp_attaches(const std::string& tracepoint) = 0;
    // An fentry program on this kernel function loads and attaches (refused with
    // EPERM under lockdown on some kernels).
    virtual bool fentry_attaches(const std::string& function) = 0;
    // Why the last probe that returned false failed ("" after a success), e.g.
    // "fentry vfs_read: attach: Operation not permitted".
    virtual std::string last_failure() const = 0;
};

// The real thing. Results are cached per question: each probe loads a program
// once per process. Needs CAP_BPF/CAP_PERFMON (root); without it every load
// probe answers false with the reason.
class KernelFeatureProbe : public FeatureProbe {
public:
    // root prefixes /sys paths (tests may point it at a fixture tree).
    explicit KernelFeatureProbe(std::string root = "/");
    std::string btf_available() override;
    bool tracepoint_exists(const std::string& category, const std::string& name) override;
    bool tp_btf_loads(const std::string& tracepoint) override;
    bool raw_tp_attaches(const std::string& tracepoint) override;
    bool fentry_attaches(const std::string& function) override;
    std::string last_failure() const override { return last_failure_; }

private:
    bool cached(const std::string& key, bool (KernelFeatureProbe::*fn)(const std::string&, std::string&),
                const std::string& arg);
    bool try_tp_btf(const std::string& tracepoint, std::string& why);
    bool try_raw_tp(const std::string& tracepoint, std::string& why);
    bool try_fentry(const std::string& function, std::string& why);

    std::string root_;
    std::map<std::string, std::pair<bool, std::string>> cache_;
    std::string last_failure_;
};

// Value of an enumerator in kernel BTF (e.g. BIO_BPS_THROTTLED, which is not
// ABI); nullopt when BTF cannot be read or has no such enumerator.
std::optional<int64_t> kernel_enum_value(const std::string& name);
// Whether kernel BTF has a struct of that name (false when BTF cannot be read).
bool kernel_struct_exists(const std::string& name);
// The view of vmlinux BTF the probes share (nullptr with why); valid until
// release_vmlinux_btf().
const KernelBtfView* shared_kernel_btf_view(std::string& why);
// The probes keep one parse of vmlinux BTF (several MiB): free it once every
// collector has started (a later probe parses it again).
void release_vmlinux_btf();

// How a collector's tracepoint programs are attached.
enum class AttachMode {
    TpBtf,   // BTF-typed args, direct memory reads (cheapest)
    RawTp,   // untyped args, CO-RE reads through bpf_probe_read_kernel
    None,    // cannot attach: see AttachPlan::reason
};
std::string to_string(AttachMode m);

struct AttachPlan {
    AttachMode mode = AttachMode::None;
    std::string reason;   // why None, or a note on why the fallback was taken
};

// Collects libbpf's warnings on this thread while alive, so that a failed
// load or attach can name the program and the verifier's complaint, not only
// an errno (libbpf prints them; without a capture they go to stderr as usual).
class LibbpfLog {
public:
    LibbpfLog();
    ~LibbpfLog();
    LibbpfLog(const LibbpfLog&) = delete;
    LibbpfLog& operator=(const LibbpfLog&) = delete;
    // "prog 'btf_rq_issue': failed to load: -13; verifier: R1 invalid mem access 'scalar'",
    // or "" when libbpf said nothing useful.
    std::string failure() const;
    void add(std::string line);

private:
    std::vector<std::string> lines_;
    LibbpfLog* outer_;
};

// tp_btf when every tracepoint's tp_btf probe loads, else raw_tp when every one
// attaches as raw_tp, else None naming the first tracepoint that failed and why.
// Tracepoints are given without category ("block_rq_issue").
AttachPlan choose_attach_mode(FeatureProbe& probe, const std::vector<std::string>& tracepoints);

// One program of a skeleton with the tracepoint it attaches to ("block_rq_issue").
struct TracepointProgram {
    bpf_program* prog;
    const char* tracepoint;
};

// Slots of a per-CPU array map: the most (a power of two) whose entries of
// `entry_bytes` on every CPU fit in `budget_bytes`, halving down to `fewest`.
uint32_t per_cpu_slots(size_t entry_bytes, int ncpu, size_t budget_bytes, uint32_t most, uint32_t fewest);

}  // namespace iodiag
