// SPDX-License-Identifier: GPL-2.0
/* The floor under iodiag's cost: one empty program on each tracepoint
 * iodiag's collectors run on (same attach type), and one program that only
 * reads the clock, beside the empty one on block_rq_issue.
 * tests/bench/overhead.py and tests/bench/non_io_tax.py run them as modes of
 * their own: what any tool pays to run a program at these hooks on this
 * machine (with BPF statistics on, their own cost included), and what one
 * timestamp adds to it. Not part of iodiag.
 *
 * Groups (tests/bench/hook_floor_driver.cpp --group): block, iouring, sched
 * (sched_switch, sched_wakeup), syscall-events (the per-syscall tracepoints
 * of the syscalls iodiag times, the attach the syscall collector uses where
 * they exist) and syscall-raw (raw_syscalls sys_enter/sys_exit, its
 * fallback). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 sink;

/* block collector */
SEC("tp_btf/block_bio_queue") int BPF_PROG(floor_block_bio_queue) { return 0; }
SEC("tp_btf/block_getrq") int BPF_PROG(floor_block_getrq) { return 0; }
SEC("tp_btf/block_rq_insert") int BPF_PROG(floor_block_rq_insert) { return 0; }
SEC("tp_btf/block_rq_issue") int BPF_PROG(floor_block_rq_issue) { return 0; }
SEC("tp_btf/block_rq_complete") int BPF_PROG(floor_block_rq_complete) { return 0; }
/* io_uring collector */
SEC("tp_btf/io_uring_submit_req") int BPF_PROG(floor_iouring_submit_req) { return 0; }
SEC("tp_btf/io_uring_queue_async_work") int BPF_PROG(floor_iouring_queue_async_work) { return 0; }
SEC("tp_btf/io_uring_complete") int BPF_PROG(floor_iouring_complete) { return 0; }
SEC("tp_btf/io_uring_cqring_wait") int BPF_PROG(floor_iouring_cqring_wait) { return 0; }
/* syscall collector: its context-switch hooks... */
SEC("tp_btf/sched_switch") int BPF_PROG(floor_sched_switch) { return 0; }
SEC("tp_btf/sched_wakeup") int BPF_PROG(floor_sched_wakeup) { return 0; }
/* ...its syscall hooks where per-syscall tracepoints exist: attached by the
 * driver to syscalls:sys_enter_<name> / sys_exit_<name> of each syscall the
 * collector times (one program, many events)... */
SEC("tracepoint") int floor_event_sys_enter(void *ctx) { return 0; }
SEC("tracepoint") int floor_event_sys_exit(void *ctx) { return 0; }
/* ...and its fallback, the raw syscall tracepoints (every syscall runs them) */
SEC("tp_btf/sys_enter") int BPF_PROG(floor_raw_sys_enter) { return 0; }
SEC("tp_btf/sys_exit") int BPF_PROG(floor_raw_sys_exit) { return 0; }

/* One timestamp: its cost is this program's ns per run minus the empty
 * floor_block_rq_issue's, which runs on the same events. */
SEC("tp_btf/block_rq_issue") int BPF_PROG(clock_read_block_rq_issue) { sink = bpf_ktime_get_ns(); return 0; }
