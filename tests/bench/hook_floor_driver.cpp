// Attaches tests/bench/hook_floor.bpf.c's empty programs on the tracepoints
// of the chosen collectors (block, iouring, syscall; default all) and waits
// for SIGTERM/SIGINT: the "floor" mode of tests/bench/overhead.py. A program
// whose tracepoint is missing or refuses it is reported and skipped.
//
//   iodiag_bench_hook_floor [--group block|iouring|syscall ...]
#include <algorithm>
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <bpf/libbpf.h>
#include <CLI/CLI.hpp>

#include "hook_floor.skel.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// "floor_block_rq_issue" -> "block"; the clock program goes with the block group.
std::string group_of(const std::string& prog) {
    const std::string name = prog.rfind("floor_", 0) == 0 ? prog.substr(6) : "block";
    return name.substr(0, name.find('_'));
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Empty BPF programs on iodiag's per-I/O tracepoints (the overhead benchmark's floor)"};
    std::vector<std::string> groups;
    app.add_option("--group", groups, "block, iouring or syscall (repeatable); default: all")
        ->check(CLI::IsMember({"block", "iouring", "syscall"}));
    CLI11_PARSE(app, argc, argv);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    hook_floor_bpf* skel = hook_floor_bpf__open();
    if (!skel) {
        std::cerr << "open: " << std::strerror(errno) << "\n";
        return 1;
    }
    bpf_program* prog;
    bpf_object__for_each_program(prog, skel->obj) {
        const std::string g = group_of(bpf_program__name(prog));
        if (!groups.empty() && std::find(groups.begin(), groups.end(), g) == groups.end())
            bpf_program__set_autoload(prog, false);
    }
    if (int err = hook_floor_bpf__load(skel); err) {
        std::cerr << "load: " << std::strerror(-err) << "\n";
        hook_floor_bpf__destroy(skel);
        return 1;
    }
    std::vector<bpf_link*> links;
    bpf_object__for_each_program(prog, skel->obj) {
        if (!bpf_program__autoload(prog)) continue;
        bpf_link* l = bpf_program__attach(prog);
        if (!l) {
            std::cerr << bpf_program__name(prog) << ": not attached: " << std::strerror(errno) << "\n";
            continue;
        }
        links.push_back(l);
    }
    std::cerr << links.size() << " programs attached\n";
    while (!g_stop) pause();
    for (auto* l : links) bpf_link__destroy(l);
    hook_floor_bpf__destroy(skel);
    return links.empty() ? 3 : 0;
}
