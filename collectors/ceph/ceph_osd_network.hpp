// The heartbeat ping times an OSD measured to its peers, as its admin socket
// prints them (`dump_osd_network 0`, Ceph 14.2.5 and later): per peer and
// interface (front: the public network, back: the cluster network that
// carries replication), the round trip's average over the last minute and the
// last round trip measured, in ms.
// A replica write costs the primary at least one such round trip to the
// replica, so a slow network shows here with healthy peers.
//
// A pure parser (text in, pings or error out): malformed or another version's
// output is rejected with a reason, never a crash. An OSD up for less than
// about a minute lists no entries yet (observed on 16.2).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace iodiag {

struct OsdPing {
    int to_osd = -1;
    std::string interface;   // "front" or "back"
    double avg_1min_ms = 0;  // "average": {"1min": ...}
    double last_ms = -1;     // "last": the newest heartbeat's round trip; -1 when absent
};

struct OsdNetworkParse {
    std::vector<OsdPing> pings;   // entries not marked stale, with a usable 1-minute average
    std::string error;            // set when the text is not a dump_osd_network reply
};

OsdNetworkParse parse_osd_network(std::string_view json);

}  // namespace iodiag
