#pragma once
// The Redis store's wire format without any socket ("sans-io"): the EVALSHA argument lists
// of the room script (lua/room.lua) for a sync or a top-up, and the decoding of its replies;
// Redis Cluster's key slots, redirections and slot map, and Redis Sentinel's answers.
// Unit-tested without a server; redis_client only moves these bytes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "waitroom/state/redis_store.hpp"
#include "waitroom/state/store.hpp"

struct redisReply;   // hiredis's reply tree
struct redisReader;  // hiredis's reply reader

namespace waitroom::state::redis {

// A reply, copied out of hiredis's reply tree (which is freed when its callback returns).
struct value {
    enum class kind { nil, integer, string, status, error, array };
    kind type = kind::nil;
    std::int64_t integer = 0;
    std::string str;  // string, status and error text
    std::vector<value> elements;

    bool is_error() const { return type == kind::error; }
};

using command = std::vector<std::string>;

// The Lua source of the room script and its SHA1 (hex), as SCRIPT LOAD answers it.
std::string_view room_script();
const std::string& room_script_sha();

std::string key(std::string_view prefix, std::string_view room, std::string_view what);
// The seven keys of a room, in the order the script takes them.
std::vector<std::string> room_keys(std::string_view prefix, std::string_view room);

// EVALSHA <sha> 7 <keys> sync ... for one room of a node's report.
command sync_command(std::string_view prefix, const node_report& node, const room_report& r);
// EVALSHA <sha> 7 <keys> top_up ...
command top_up_command(std::string_view prefix, const top_up_request& req);
// EVALSHA <sha> 7 <keys> overrides ... (admin PATCH; a reload clearing a key).
command overrides_command(std::string_view prefix, const override_write& w);
command script_load_command();

// hiredis's reader allocates an array's element slots as soon as it reads the count, before any
// element has arrived: the eleven bytes `*200000000\r\n` would cost 1.6 GB. bound_replies()
// gives `reader` reply builders that make the same reply trees as hiredis's own, but refuse a
// reply whose arrays hold more than `budget.max` (max_reply_elements) elements in all. The
// reader then fails ("Out of memory"), and the connection is dropped as on any protocol error.
// `budget` belongs to the connection and must outlive the reader. (The fuzzer sets a smaller
// `max`: the same arithmetic, without megabytes of slots per input.)
inline constexpr std::int64_t max_reply_elements = std::int64_t{1} << 20;
struct reply_budget {
    std::int64_t max = max_reply_elements;
    std::int64_t left = max;
};
void bound_replies(redisReader& reader, reply_budget& budget);

// A copy of hiredis's reply `r`, arrays with all their elements (hiredis's reader bounds the
// nesting), unknown types as nil.
value from_reply(const redisReply& r);

// The script was not in the server's cache (after a restart or SCRIPT FLUSH).
bool is_noscript(const value& v);
// The script refused a sync's deltas: the node knew another epoch of the room (room.lua).
bool is_stale(const value& v);
// Decodes the script's sync answer for room `room` (room_grant::stale for "stale");
// errc::protocol when it is not one.
std::error_code parse_grant(const value& v, const std::string& room, std::int64_t now_ms,
                            room_grant& out);
std::error_code parse_top_up(const value& v, std::int64_t& granted);
// The script's {queue_all, suspended} (-1 unset, 0, 1): its overrides answer, a grant's last part.
std::error_code parse_overrides(const value& v, room_switch_values& out);

// Redis Cluster: the slots of keys, MOVED and ASK redirections, the CLUSTER SLOTS map.
inline constexpr std::uint16_t cluster_slots = 16384;

// The hash slot of `key`: CRC16 (XMODEM) of its hash tag (the part between the first '{' and the
// next '}', when not empty) or else of the whole key, modulo 16384, as Redis computes it.
std::uint16_t key_slot(std::string_view key);

// A "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>" error reply. An empty host means
// the host of the node that answered (`from`).
struct redirect {
    bool ask = false;
    std::uint16_t slot = 0;
    redis_endpoint to;
};
std::optional<redirect> parse_redirect(const value& v, const redis_endpoint& from);

// A CLUSTER SLOTS answer as ranges of slots and their masters; nullopt when it is not one.
// Ranges whose master has no known address ("?") are left out; an empty host is `from`'s.
struct slot_range {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    redis_endpoint master;
};
std::optional<std::vector<slot_range>> parse_cluster_slots(const value& v,
                                                           const redis_endpoint& from);

// Redis Sentinel: its answers and the ROLE of the server it named.
// The master's address in a sentinel's answer (an array of host and port); nullopt otherwise.
std::optional<redis_endpoint> parse_master_address(const value& v);
// True when `v` is a ROLE answer that says "master".
bool is_master_role(const value& v);
// The replicas connected to a master, from its ROLE answer (0 when it is not one).
std::size_t connected_replicas(const value& v);

}  // namespace waitroom::state::redis
