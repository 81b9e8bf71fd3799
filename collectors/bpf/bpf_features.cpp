#include "collectors/bpf/bpf_features.hpp"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include <spdlog/spdlog.h>
#include "collectors/bpf/bpf_fault_injection.hpp"
#include "collectors/bpf/kernel_btf_view.hpp"

namespace iodiag {

namespace {

namespace fs = std::filesystem;

// The smallest valid program: r0 = 0; exit.
const bpf_insn kReturnZero[] = {
    {BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0},
    {BPF_JMP | BPF_EXIT, 0, 0, 0, 0},
};

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

struct BtfDeleter {
    void operator()(btf* b) const { btf__free(b); }
};
using BtfPtr = std::unique_ptr<btf, BtfDeleter>;

// The kernel's types, as the probes ask about them, through one view
// (kernel_btf_view.hpp) of /sys/kernel/btf/vmlinux's bytes: the file mapped
// where the kernel allows it (no copy), else libbpf's parse of it, which holds
// the bytes (kernels that refuse the mapping).
struct KernelTypes {
    std::unique_ptr<MappedKernelBtf> mapped;
    BtfPtr parsed;
    std::optional<KernelBtfView> parsed_view;

    const KernelBtfView& view() const { return mapped ? mapped->view() : *parsed_view; }
};

// Maps or loads kernel BTF, or says why it cannot.
std::unique_ptr<KernelTypes> load_kernel_types(std::string& why) {
    auto k = std::make_unique<KernelTypes>();
    std::string unmapped;
    k->mapped = MappedKernelBtf::map("/sys/kernel/btf/vmlinux", unmapped);
    if (k->mapped) return k;
    k->parsed.reset(btf__load_vmlinux_btf());
    if (!k->parsed) {
        why = "kernel BTF unreadable (/sys/kernel/btf/vmlinux): " + errno_text(errno);
        return nullptr;
    }
    uint32_t size = 0;
    const void* raw = btf__raw_data(k->parsed.get(), &size);
    std::string invalid;
    if (raw) k->parsed_view = KernelBtfView::of(std::string_view(static_cast<const char*>(raw), size), invalid);
    if (!k->parsed_view) {
        why = "kernel BTF (/sys/kernel/btf/vmlinux, parsed by libbpf): " + (raw ? invalid : "no raw data");
        return nullptr;
    }
    spdlog::debug("kernel BTF parsed by libbpf ({})", unmapped);
    return k;
}

// Loads a tracing program (tp_btf or fentry) against BTF type `type_name`, then
// (with `attach`) attaches it; closes everything. True when every step succeeds.
bool load_and_attach_tracing(const KernelTypes& vmlinux, bpf_attach_type attach_type, const std::string& type_name,
                             uint32_t kind, const std::string& what, bool attach, std::string& why) {
    const int type_id = vmlinux.view().find(type_name, kind);
    if (type_id < 0) {
        why = what + ": no BTF type " + type_name + " in vmlinux";
        return false;
    }
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach_type,
                .attach_btf_id = static_cast<__u32>(type_id));
    const int prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, nullptr, "GPL", kReturnZero, 2, &opts);
    if (prog < 0) {
        why = what + ": load: " + errno_text(errno);
        return false;
    }
    if (!attach) {
        close(prog);
        return true;
    }
    // tp_btf attaches through raw_tracepoint_open, fentry through a link; both
    // accept raw_tracepoint_open(NULL, fd) for BTF-typed tracing programs.
    const int link = bpf_raw_tracepoint_open(nullptr, prog);
    const int err = errno;
    close(prog);
    if (link < 0) {
        why = what + ": attach: " + errno_text(err);
        return false;
    }
    close(link);
    return true;
}

}  // namespace

// The probes share one mapping (or parse) of vmlinux BTF until
// release_vmlinux_btf() (a parse holds several MiB for as long as it lives).
namespace {
std::mutex g_btf_mu;
std::unique_ptr<KernelTypes> g_btf;
std::string g_btf_error;
bool g_btf_loaded = false;
}  // namespace

static const KernelTypes* shared_vmlinux_btf(std::string& why) {
    std::lock_guard lock(g_btf_mu);
    if (!g_btf_loaded) {
        g_btf = load_kernel_types(g_btf_error);
        g_btf_loaded = true;
    }
    if (!g_btf) why = g_btf_error;
    return g_btf.get();
}

void release_vmlinux_btf() {
    std::lock_guard lock(g_btf_mu);
    g_btf.reset();
    g_btf_loaded = false;
}

const KernelBtfView* shared_kernel_btf_view(std::string& why) {
    const KernelTypes* types = shared_vmlinux_btf(why);
    return types ? &types->view() : nullptr;
}

std::optional<int64_t> kernel_enum_value(const std::string& name) {
    std::string why;
    const KernelTypes* types = shared_vmlinux_btf(why);
    return types ? types->view().enum_value(name) : std::nullopt;
}

bool kernel_struct_exists(const std::string& name) {
    std::string why;
    const KernelTypes* types = shared_vmlinux_btf(why);
    return types && types->view().find(name, BTF_KIND_STRUCT) > 0;
}

KernelFeatureProbe::KernelFeatureProbe(std::string root) : root_(std::move(root)) {}

bool KernelFeatureProbe::cached(const std::string& key,
                                bool (KernelFeatureProbe::*fn)(const std::string&, std::string&),
                                const std::string& arg) {
    auto it = cache_.find(key);
    if (it == cache_.end()) {
        std::string why;
        const bool ok = (this->*fn)(arg, why);
        it = cache_.emplace(key, std::make_pair(ok, ok ? std::string() : why)).first;
    }
    last_failure_ = it->second.second;
    return it->second.first;
}

std::string KernelFeatureProbe::btf_available() {
    const fs::path p = fs::path(root_) / "sys/kernel/btf/vmlinux";
    std::error_code ec;
    if (!fs::exists(p, ec)) return p.string() + " does not exist (kernel built without CONFIG_DEBUG_INFO_BTF)";
    if (root_ != "/") return "";   // fixture tree: existence is all we can check
    std::string why;
    return shared_vmlinux_btf(why) ? "" : why;
}

bool KernelFeatureProbe::tracepoint_exists(const std::string& category, const std::string& name) {
    if (auto fault = injected_bpf_fault("tracepoint", {name})) {
        last_failure_ = "no tracepoint " + category + ":" + name + " (" + *fault + ")";
        return false;
    }
    const fs::path base = fs::path(root_) / "sys/kernel/tracing";
    const fs::path legacy = fs::path(root_) / "sys/kernel/debug/tracing";
    std::error_code ec;
    auto has = [&](const fs::path& tracing) {
        return fs::is_directory(tracing / "events" / category / name, ec);
    };
    if (has(base) || has(legacy)) {
        last_failure_.clear();
        return true;
    }
    // /sys/kernel/tracing is root-only (mode 0700): a non-root caller sees
    // nothing there, mounted or not; say so rather than blame the mount.
    if (root_ == "/" && access(base.c_str(), R_OK | X_OK) != 0 && errno == EACCES) {
        last_failure_ = "cannot read " + base.string() + " (needs root)";
        return false;
    }
    // tracefs may simply not be mounted: mount it once (live system only).
    if (root_ == "/" && !fs::exists(base / "events", ec) && !fs::exists(legacy / "events", ec)) {
        if (mount("nodev", base.c_str(), "tracefs", 0, nullptr) != 0) {
            last_failure_ = "tracefs not mounted at " + base.string() + " and mount failed: " +
                            errno_text(errno);
            return false;
        }
        if (has(base)) {
            last_failure_.clear();
            return true;
        }
    }
    last_failure_ = "no tracepoint " + category + ":" + name + " under " + base.string() + "/events";
    return false;
}

bool KernelFeatureProbe::tp_btf_loads(const std::string& tracepoint) {
    return cached("tp_btf:" + tracepoint, &KernelFeatureProbe::try_tp_btf, tracepoint);
}
bool KernelFeatureProbe::raw_tp_attaches(const std::string& tracepoint) {
    return cached("raw_tp:" + tracepoint, &KernelFeatureProbe::try_raw_tp, tracepoint);
}
bool KernelFeatureProbe::fentry_attaches(const std::string& function) {
    return cached("fentry:" + function, &KernelFeatureProbe::try_fentry, function);
}

bool KernelFeatureProbe::try_tp_btf(const std::string& tracepoint, std::string& why) {
    if (auto fault = injected_bpf_fault("tracepoint", {tracepoint})) {
        why = "tp_btf " + tracepoint + ": " + *fault;
        return false;
    }
    const KernelTypes* vmlinux = shared_vmlinux_btf(why);
    // Load only: the kernel checks the tracepoint's BTF and the program type
    // at load. Attaching would switch the tracepoint on and off again (a text
    // patch with a cross-CPU sync each way, 7-15 ms per io_uring tracepoint
    // here), and the collector attaches its real programs right after anyway
    // (falling back to raw_tp if that fails).
    return vmlinux && load_and_attach_tracing(*vmlinux, BPF_TRACE_RAW_TP, "btf_trace_" + tracepoint,
                                              BTF_KIND_TYPEDEF, "tp_btf " + tracepoint, false, why);
}

bool KernelFeatureProbe::try_fentry(const std::string& function, std::string& why) {
    const KernelTypes* vmlinux = shared_vmlinux_btf(why);
    return vmlinux && load_and_attach_tracing(*vmlinux, BPF_TRACE_FENTRY, function, BTF_KIND_FUNC,
                                              "fentry " + function, true, why);
}

bool KernelFeatureProbe::try_raw_tp(const std::string& tracepoint, std::string& why) {
    if (auto fault = injected_bpf_fault("tracepoint", {tracepoint})) {
        why = "raw_tp " + tracepoint + ": " + *fault;
        return false;
    }
    const int prog =
        bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, nullptr, "GPL", kReturnZero, 2, nullptr);
    if (prog < 0) {
        why = "raw_tp " + tracepoint + ": load: " + errno_text(errno);
        return false;
    }
    const int link = bpf_raw_tracepoint_open(tracepoint.c_str(), prog);
    const int err = errno;
    close(prog);
    if (link < 0) {
        why = "raw_tp " + tracepoint + ": attach: " + errno_text(err);
        return false;
    }
    close(link);
    return true;
}

namespace {

thread_local LibbpfLog* t_capture = nullptr;

int libbpf_print(enum libbpf_print_level level, const char* fmt, va_list args) {
    if (level == LIBBPF_DEBUG) return 0;
    if (LibbpfLog* log = t_capture) {
        // One call may carry many lines (the verifier's log comes whole).
        char small[1024];
        va_list copy;
        va_copy(copy, args);
        const int n = vsnprintf(small, sizeof small, fmt, copy);
        va_end(copy);
        std::string text;
        if (n >= static_cast<int>(sizeof small)) {
            text.resize(static_cast<size_t>(n) + 1);
            vsnprintf(text.data(), text.size(), fmt, args);
            text.resize(static_cast<size_t>(n));
        } else {
            text = small;
        }
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            std::string line = text.substr(start, end - start);
            while (!line.empty() && line.back() == ' ') line.pop_back();
            if (!line.empty()) log->add(std::move(line));
            start = end + 1;
        }
        return 0;
    }
    return vfprintf(stderr, fmt, args);
}

}  // namespace

LibbpfLog::LibbpfLog() : outer_(t_capture) {
    static std::once_flag once;
    std::call_once(once, [] { libbpf_set_print(libbpf_print); });
    t_capture = this;
}

LibbpfLog::~LibbpfLog() { t_capture = outer_; }

void LibbpfLog::add(std::string line) {
    if (lines_.size() < 4096) lines_.push_back(std::move(line));
}

std::string LibbpfLog::failure() const {
    // The program libbpf names, and the verifier's last complaint before its
    // statistics lines ("processed N insns", "verification time").
    std::string prog, verifier, last;
    bool in_log = false;
    for (const auto& l : lines_) {
        if (l.find("BEGIN PROG LOAD LOG") != std::string::npos) { in_log = true; continue; }
        if (l.find("END PROG LOAD LOG") != std::string::npos) { in_log = false; continue; }
        if (in_log) {
            if (l.rfind("processed ", 0) != 0 && l.rfind("verification time", 0) != 0 &&
                l.rfind("stack depth", 0) != 0 && l.find("insns (limit") == std::string::npos)
                verifier = l;
            continue;
        }
        if (l.find("prog '") != std::string::npos && prog.empty()) prog = l;
        last = l;
    }
    // The whole log (verifier output included) with -v.
    for (const auto& l : lines_) spdlog::debug("libbpf: {}", l);
    std::string out = prog.empty() ? last : prog;
    if (auto p = out.find("libbpf: "); p == 0) out = out.substr(8);
    if (!verifier.empty()) out += (out.empty() ? "" : "; ") + std::string("verifier: ") + verifier;
    return out;
}

std::string to_string(AttachMode m) {
    switch (m) {
        case AttachMode::TpBtf: return "tp_btf";
        case AttachMode::RawTp: return "raw_tp";
        case AttachMode::None: return "none";
    }
    return "none";
}

AttachPlan choose_attach_mode(FeatureProbe& probe, const std::vector<std::string>& tracepoints) {
    AttachPlan plan;
    if (auto why = probe.btf_available(); !why.empty()) {
        plan.reason = why;
        return plan;
    }
    std::string tp_btf_failure;
    bool all_tp_btf = true;
    for (const auto& tp : tracepoints) {
        if (!probe.tp_btf_loads(tp)) {
            all_tp_btf = false;
            tp_btf_failure = probe.last_failure();
            break;
        }
    }
    if (all_tp_btf) {
        plan.mode = AttachMode::TpBtf;
        return plan;
    }
    for (const auto& tp : tracepoints) {
        if (!probe.raw_tp_attaches(tp)) {
            plan.reason = tp_btf_failure + "; " + probe.last_failure();
            return plan;
        }
    }
    plan.mode = AttachMode::RawTp;
    plan.reason = "tp_btf refused (" + tp_btf_failure + "), using raw_tp with CO-RE reads";
    return plan;
}

uint32_t per_cpu_slots(size_t entry_bytes, int ncpu, size_t budget_bytes, uint32_t most, uint32_t fewest) {
    uint32_t slots = most;
    while (slots > fewest && size_t(slots) * entry_bytes * size_t(std::max(ncpu, 1)) > budget_bytes) slots /= 2;
    return slots;
}

}  // namespace iodiag
