// Ceph's op tracker as the OSD admin socket prints it: `dump_historic_ops`,
// `dump_historic_slow_ops` and `dump_ops_in_flight`. Each op carries its
// description and an event timeline (initiated, queued_for_pg, reached_pg,
// started, waiting for rw locks, waiting for subops from N,M,
// sub_op_commit_rec, op_commit, commit_sent, done), from which the time an op
// spent in each stage is read exactly, op by op.
//
// Pure parsers (text in, ops or error out): malformed or another version's
// output is rejected with a reason, never a crash.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace iodiag {

struct TrackedOp {
    enum class Kind { ClientWrite, ClientRead, ClientOther, Replica, Other };
    Kind kind = Kind::Other;
    std::string description;
    std::string reqid;               // e.g. "client.4140.0:1577" (same on primary and replicas)
    double initiated_unix = 0;       // seconds since the epoch
    double duration_s = 0;           // done - initiated (or age, for ops still in flight)
    std::string flag_point;          // e.g. "commit sent; apply or cleanup", "waiting for rw locks"
    std::vector<std::pair<std::string, double>> events;   // name, unix time; in order
    std::vector<int> peers;          // from "waiting for subops from 1,2"
    bool in_flight = false;          // from dump_ops_in_flight (set by the caller)

    // Stage durations in seconds, nullopt when the timeline lacks its events.
    std::optional<double> before_queue() const;    // initiated -> queued_for_pg (messenger, dispatch)
    std::optional<double> queue_wait() const;      // queued_for_pg -> reached_pg (op queue, PG lock)
    std::optional<double> replica_wait() const;    // waiting for subops -> last sub_op_commit_rec
    std::optional<double> local_commit() const;    // waiting for subops -> op_commit
    double rw_lock_wait() const;                   // sum of "waiting for rw locks" -> next event
    bool waited_for_rw_locks() const;
};

struct TrackedOpsParse {
    std::vector<TrackedOp> ops;
    std::string error;   // set when the text is not an op list at all
};

// Parses any of the three dumps (they differ in the key of the list: "ops" or
// "Ops"). Ops without a parseable initiated_at are skipped.
TrackedOpsParse parse_tracked_ops(std::string_view json);

// "2026-12-01T07:10:55.959332+0000" -> unix seconds; nullopt if malformed.
std::optional<double> parse_ceph_timestamp(std::string_view text);

}  // namespace iodiag
