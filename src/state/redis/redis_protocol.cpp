#include "redis_protocol.hpp"

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "waitroom/state/error.hpp"
#include "waitroom/state/queued_tickets.hpp"

namespace waitroom::state::redis {

extern const std::string_view room_script_text;  // generated from lua/room.lua

namespace {

void push_limits(command& c, const room::room_limits& l) {
    c.push_back(std::to_string(l.total_active_users));
    c.push_back(std::to_string(l.new_users_per_minute));
    c.push_back(std::to_string(l.session_ms));
    c.push_back(std::to_string(l.abandon_after_ms));
    c.push_back(std::to_string(l.window_ms));
    c.push_back(std::to_string(l.rate_window_ms));
    c.push_back(std::to_string(l.rate_span_ms));
    c.push_back(l.needs_slots ? "1" : "0");
    c.push_back(std::to_string(l.rejoin_ms));
}

command script_call(std::string_view prefix, std::string_view room, const char* op,
                    const std::string& node_id, const std::string& datacenter, std::int64_t now_ms,
                    const room::room_limits& l) {
    command c;
    c.reserve(32);
    c.emplace_back("EVALSHA");
    c.push_back(room_script_sha());
    auto keys = room_keys(prefix, room);
    c.push_back(std::to_string(keys.size()));
    for (auto& k : keys) {
        c.push_back(std::move(k));
    }
    c.emplace_back(op);
    c.push_back(node_id);
    c.push_back(datacenter);
    c.push_back(std::to_string(now_ms));
    push_limits(c, l);
    return c;
}

bool as_int(const value& v, std::int64_t& out) {
    if (v.type != value::kind::integer) {
        return false;
    }
    out = v.integer;
    return true;
}

// A count of visitors or slots past 2^40 (a thousand billion) is no store's answer. Refused, it
// never reaches the sums and differences of room_state and the pools, where a value near the
// ends of int64 would overflow (a key written by hand, a broken proxy in between).
constexpr std::int64_t max_count = std::int64_t{1} << 40;

bool as_count(const value& v, std::int64_t& out, std::int64_t lowest = 0) {
    return as_int(v, out) && out >= lowest && out <= max_count;
}

// A window start (ms since the epoch) past ±2^62, 146 million years, is no store's either: the
// degraded allowance adds the minute to it and the estimates subtract now from it.
constexpr std::int64_t max_time = std::int64_t{1} << 62;

bool as_time(const value& v, std::int64_t& out) {
    return as_int(v, out) && out >= -max_time && out <= max_time;
}

const char* write_arg(switch_write w) {
    switch (w) {
        case switch_write::unset:
            return "unset";
        case switch_write::off:
            return "0";
        case switch_write::on:
            return "1";
        case switch_write::keep:
            break;
    }
    return "keep";
}

// A reply's flattened {window, count, ...} list: ascending, its newest `most` kept. False for
// anything else (not a list, odd, a non-integer, a negative count): a reply can be anything.
bool as_windows(const value& v, std::size_t most,
                std::vector<std::pair<std::int64_t, std::int64_t>>& out) {
    if (v.type != value::kind::array || v.elements.size() % 2 != 0) {
        return false;
    }
    out.reserve(v.elements.size() / 2);
    for (std::size_t i = 0; i < v.elements.size(); i += 2) {
        std::int64_t w = 0;
        std::int64_t n = 0;
        if (!as_time(v.elements[i], w) || !as_count(v.elements[i + 1], n)) {
            return false;
        }
        out.emplace_back(w, n);
    }
    // The newest `most` to the back without sorting the rest: a long list costs linear time.
    if (out.size() > most) {
        const auto first_kept = out.end() - static_cast<std::ptrdiff_t>(most);
        std::nth_element(out.begin(), first_kept, out.end());
        out.erase(out.begin(), first_kept);
    }
    std::sort(out.begin(), out.end());
    return true;
}

// A reply's list of tickets (decimal strings: the script keeps them as it was sent them), sorted
// into `out`. False for anything else.
bool as_tickets(const value& v, std::vector<std::uint64_t>& out) {
    if (v.type != value::kind::array) {
        return false;
    }
    for (const value& t : v.elements) {
        std::uint64_t ticket = 0;
        const char* end = t.str.data() + t.str.size();
        if (t.type != value::kind::string ||
            std::from_chars(t.str.data(), end, ticket) != std::from_chars_result{end, {}}) {
            return false;
        }
        out.push_back(ticket);
    }
    std::sort(out.begin(), out.end());
    return true;
}

bool as_switch(const value& v, std::optional<bool>& out) {
    std::int64_t n = 0;
    if (!as_int(v, n) || n < -1 || n > 1) {
        return false;
    }
    out = n < 0 ? std::nullopt : std::optional<bool>(n == 1);
    return true;
}

}  // namespace

std::string_view room_script() {
    return room_script_text;
}

const std::string& room_script_sha() {
    // SCRIPT LOAD answers the SHA1 of the body; knowing it up front lets a call be built
    // before the first connection has loaded the script.
    static const std::string sha = [] {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        EVP_Digest(room_script_text.data(), room_script_text.size(), md, &len, EVP_sha1(), nullptr);
        std::string hex;
        char buf[3];
        for (unsigned int i = 0; i < len; ++i) {
            std::snprintf(buf, sizeof buf, "%02x", md[i]);
            hex += buf;
        }
        return hex;
    }();
    return sha;
}

std::string key(std::string_view prefix, std::string_view room, std::string_view what) {
    std::string k;
    k.reserve(prefix.size() + room.size() + what.size() + 5);
    k.append(prefix).append(":{").append(room).append("}:").append(what);
    return k;
}

std::vector<std::string> room_keys(std::string_view prefix, std::string_view room) {
    return {key(prefix, room, "admitted"), key(prefix, room, "active"),
            key(prefix, room, "waiting"),  key(prefix, room, "nodes"),
            key(prefix, room, "meta"),     key(prefix, room, "overrides"),
            key(prefix, room, "revoked"),  key(prefix, room, "queued"),
            key(prefix, room, "levels"),   key(prefix, room, "flagged")};
}

command sync_command(std::string_view prefix, const node_report& node, const room_report& r) {
    command c =
        script_call(prefix, r.room, "sync", node.node_id, node.datacenter, node.now_ms, r.limits);
    c.push_back(std::to_string(node.node_ttl_ms));
    c.push_back(std::to_string(r.deltas.slots_used));
    c.push_back(std::to_string(r.slots_returned));
    c.push_back(std::to_string(r.deltas.demand));
    c.push_back(std::to_string(batch_of(node, r)));
    c.push_back(r.epoch);
    // A re-report (full) carries the node's live totals and its held slots in the deltas' place.
    c.push_back(r.full ? std::to_string(std::max<std::int64_t>(0, r.held)) : std::string("-1"));
    const room::room_deltas& windows = r.full ? r.live : r.deltas;
    c.push_back(std::to_string(windows.admitted.entries().size()));
    for (const auto& [w, d] : windows.admitted.entries()) {
        c.push_back(std::to_string(w));
        c.push_back(std::to_string(d));
    }
    c.push_back(std::to_string(windows.active.entries().size()));
    for (const auto& [w, d] : windows.active.entries()) {
        c.push_back(std::to_string(w));
        c.push_back(std::to_string(d));
    }
    // The queue counts tickets: its counts go only with a re-report (they come without them).
    const std::size_t counts = r.full ? windows.waiting.entries().size() : 0;
    c.push_back(std::to_string(counts));
    for (std::size_t i = 0; i < counts; ++i) {
        const auto& [bw, d] = windows.waiting.entries()[i];
        c.push_back(std::to_string(bw.bucket));
        c.push_back(std::to_string(bw.window));
        c.push_back(std::to_string(d));
    }
    c.push_back(std::to_string(windows.revoked.size()));
    for (const auto& rev : windows.revoked) {
        c.push_back(std::to_string(rev.ticket));
        c.push_back(std::to_string(rev.window));
    }
    c.push_back(std::to_string(windows.checked_in.size()));
    for (const auto& ci : windows.checked_in) {
        c.push_back(std::to_string(ci.ticket));
        c.push_back(std::to_string(ci.bucket));
        c.push_back(std::to_string(ci.window));
        c.push_back(std::to_string(queued_tickets::rank(ci.ticket)));
    }
    c.push_back(std::to_string(windows.left_queue.size()));
    for (std::uint64_t t : windows.left_queue) {
        c.push_back(std::to_string(t));
    }
    c.push_back(std::to_string(windows.flagged.size()));
    for (std::uint64_t t : windows.flagged) {
        c.push_back(std::to_string(t));
    }
    // The last two arguments (the script reads them from the end).
    // A re-report sends it too, leaving degraded mode: the script keeps the node reserved until
    // a report shows that it got an answer (older scripts ignore it with a re-report).
    c.push_back(r.held_exact ? std::to_string(std::max<std::int64_t>(0, r.held))
                             : std::string("-1"));
    c.push_back(std::to_string(r.lost_top_up));
    return c;
}

command top_up_command(std::string_view prefix, const top_up_request& req) {
    command c = script_call(prefix, req.room, "top_up", req.node_id, req.datacenter, req.now_ms,
                            req.limits);
    c.push_back(std::to_string(req.want));
    c.push_back(req.epoch);
    c.push_back(std::to_string(req.id));
    c.push_back(std::to_string(req.need));
    c.push_back(std::to_string(std::max<std::int64_t>(0, req.unreported)));
    return c;
}

command overrides_command(std::string_view prefix, const override_write& w) {
    command c;
    c.reserve(17);
    c.emplace_back("EVALSHA");
    c.push_back(room_script_sha());
    auto keys = room_keys(prefix, w.room);
    c.push_back(std::to_string(keys.size()));
    for (auto& k : keys) {
        c.push_back(std::move(k));
    }
    c.emplace_back("overrides");
    c.emplace_back(write_arg(w.queue_all));
    c.emplace_back(write_arg(w.suspended));
    c.push_back(std::to_string(w.keep_ms));
    return c;
}

command script_load_command() {
    return {"SCRIPT", "LOAD", std::string(room_script())};
}

namespace {

// The reply builders below make exactly the trees hiredis's defaults make (calloc'd redisReply,
// malloc'd text, each child linked into its parent's slot), so freeReplyObject frees them.
redisReply* new_reply(const redisReadTask* task, int type) {
    auto* r = static_cast<redisReply*>(std::calloc(1, sizeof(redisReply)));
    if (r != nullptr) {
        r->type = type;
        if (task->parent != nullptr) {
            static_cast<redisReply*>(task->parent->obj)->element[task->idx] = r;
        }
    }
    return r;
}

void* new_string(const redisReadTask* task, char* str, std::size_t len) {
    char* text = static_cast<char*>(std::malloc(len + 1));
    if (text == nullptr) {
        return nullptr;
    }
    std::memcpy(text, str, len);
    text[len] = '\0';
    redisReply* r = new_reply(task, task->type);
    if (r == nullptr) {
        std::free(text);
        return nullptr;
    }
    r->str = text;
    r->len = len;
    return r;
}

void* new_array(const redisReadTask* task, int elements) {
    auto* budget = static_cast<reply_budget*>(task->privdata);
    if (task->parent == nullptr) {
        budget->left = budget->max;  // a new reply
    }
    // hiredis 0.14 passes a count that did not fit an int truncated: negative means garbage.
    if (elements < 0 || elements > budget->left) {
        return nullptr;  // the reader reports "Out of memory" and stops
    }
    budget->left -= elements;
    redisReply** slots = nullptr;
    if (elements > 0) {
        slots = static_cast<redisReply**>(
            std::calloc(static_cast<std::size_t>(elements), sizeof(redisReply*)));
        if (slots == nullptr) {
            return nullptr;
        }
    }
    redisReply* r = new_reply(task, REDIS_REPLY_ARRAY);
    if (r == nullptr) {
        std::free(slots);
        return nullptr;
    }
    r->element = slots;
    r->elements = static_cast<std::size_t>(elements);
    return r;
}

void* new_integer(const redisReadTask* task, long long v) {
    redisReply* r = new_reply(task, REDIS_REPLY_INTEGER);
    if (r != nullptr) {
        r->integer = v;
    }
    return r;
}

void* new_nil(const redisReadTask* task) {
    return new_reply(task, REDIS_REPLY_NIL);
}

void free_reply(void* r) {
    freeReplyObject(r);
}

redisReplyObjectFunctions bounded_builders{new_string, new_array, new_integer, new_nil, free_reply};

}  // namespace

void bound_replies(redisReader& reader, reply_budget& budget) {
    reader.fn = &bounded_builders;
    reader.privdata = &budget;
}

value from_reply(const redisReply& r) {
    value v;
    switch (r.type) {
        case REDIS_REPLY_INTEGER:
            v.type = value::kind::integer;
            v.integer = r.integer;
            break;
        case REDIS_REPLY_STRING:
            v.type = value::kind::string;
            v.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_STATUS:
            v.type = value::kind::status;
            v.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_ERROR:
            v.type = value::kind::error;
            v.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_ARRAY:
            v.type = value::kind::array;
            v.elements.reserve(r.elements);
            for (std::size_t i = 0; i < r.elements; ++i) {
                v.elements.push_back(from_reply(*r.element[i]));
            }
            break;
        default:
            v.type = value::kind::nil;
            break;
    }
    return v;
}

bool is_noscript(const value& v) {
    return v.type == value::kind::error && v.str.starts_with("NOSCRIPT");
}

bool is_stale(const value& v) {
    return v.type == value::kind::string && v.str == "stale";
}

std::error_code parse_grant(const value& v, const std::string& room, std::int64_t now_ms,
                            room_grant& out) {
    const auto bad = make_error_code(errc::protocol);
    out = room_grant{};
    out.room = room;
    if (is_stale(v)) {
        out.stale = true;
        return {};
    }
    // 14 elements; 13 from a script without the flagged tickets, 12 from one without the places
    // by check-in window either, 11 from one without the minute's sub-windows too (its degraded
    // allowance then dates the minute's sum at the answer, see sync_degraded.cpp).
    if (v.type != value::kind::array || v.elements.size() < 11 || v.elements.size() > 14 ||
        v.elements[8].type != value::kind::string) {
        return bad;
    }
    const auto& e = v.elements;
    out.epoch = e[8].str;
    out.counts.as_of_ms = now_ms;
    if (!as_count(e[0], out.granted) || !as_count(e[1], out.release) ||
        !as_count(e[2], out.counts.active, -max_count) ||
        !as_count(e[3], out.counts.admitted_last_minute, -max_count) ||
        !as_count(e[4], out.counts.held) || !as_count(e[10], out.abandoned)) {
        return bad;
    }
    const value& waiting = e[5];
    const value& dcs = e[6];
    if (waiting.type != value::kind::array || waiting.elements.size() % 2 != 0 ||
        dcs.type != value::kind::array || dcs.elements.size() % 2 != 0) {
        return bad;
    }
    for (std::size_t i = 0; i < waiting.elements.size(); i += 2) {
        std::int64_t bucket = 0;
        std::int64_t n = 0;
        if (!as_int(waiting.elements[i], bucket) || !as_count(waiting.elements[i + 1], n)) {
            return bad;
        }
        out.counts.waiting.emplace_back(bucket, n);
    }
    for (std::size_t i = 0; i < dcs.elements.size(); i += 2) {
        std::int64_t n = 0;
        // A count of nodes no store could have (negative, or past 32 bits) is no store's answer:
        // cast, it would split a room's spare between billions of nodes (engine).
        if (dcs.elements[i].type != value::kind::string || !as_int(dcs.elements[i + 1], n) ||
            n < 0 || n > std::numeric_limits<std::uint32_t>::max()) {
            return bad;
        }
        out.counts.datacenters.push_back({dcs.elements[i].str, static_cast<std::uint32_t>(n)});
    }
    if (!as_tickets(e[9], out.counts.revoked) ||
        (e.size() >= 14 && !as_tickets(e[13], out.counts.flagged))) {
        return bad;
    }
    if (e.size() >= 12 && !as_windows(e[11], max_admitted_windows, out.counts.admitted_windows)) {
        return bad;
    }
    // The script lists about max_active_windows at most (by runs beyond), twice that with
    // nodes' clocks far ahead: a longer list is no script's. It only informs the wait
    // estimate: left out unread, not a failed grant. (A list of the right length with a count
    // or window no store could have fails the answer, as every other list does.)
    if (e.size() >= 13 && e[12].elements.size() / 2 <= room::max_active_windows_read &&
        !as_windows(e[12], std::numeric_limits<std::size_t>::max(), out.counts.active_windows)) {
        return bad;
    }
    return parse_overrides(e[7], out.overrides);
}

std::error_code parse_overrides(const value& v, room_switch_values& out) {
    if (v.type != value::kind::array || v.elements.size() != 2 ||
        !as_switch(v.elements[0], out.queue_all) || !as_switch(v.elements[1], out.suspended)) {
        return make_error_code(errc::protocol);
    }
    return {};
}

std::error_code parse_top_up(const value& v, std::int64_t& granted) {
    if (!as_count(v, granted)) {
        return make_error_code(errc::protocol);
    }
    return {};
}

namespace {

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, as Redis Cluster's key hashing.
std::uint16_t crc16(std::string_view bytes) {
    std::uint16_t crc = 0;
    for (unsigned char b : bytes) {
        crc ^= static_cast<std::uint16_t>(b << 8);
        for (int i = 0; i < 8; ++i) {
            crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                      : static_cast<std::uint16_t>(crc << 1);
        }
    }
    return crc;
}

std::optional<std::uint16_t> to_port(std::string_view s) {
    std::uint16_t p = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), p);
    if (ec != std::errc{} || ptr != s.data() + s.size() || p == 0) {
        return std::nullopt;
    }
    return p;
}

}  // namespace

std::uint16_t key_slot(std::string_view key) {
    auto open = key.find('{');
    if (open != std::string_view::npos) {
        auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) {
            key = key.substr(open + 1, close - open - 1);
        }
    }
    return crc16(key) % cluster_slots;
}

std::optional<redirect> parse_redirect(const value& v, const redis_endpoint& from) {
    redirect r;
    std::string_view s = v.str;
    if (!v.is_error()) {
        return std::nullopt;
    }
    if (s.starts_with("MOVED ")) {
        s.remove_prefix(6);
    } else if (s.starts_with("ASK ")) {
        r.ask = true;
        s.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    auto space = s.find(' ');
    if (space == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view slot = s.substr(0, space);
    std::string_view where = s.substr(space + 1);
    auto [ptr, ec] = std::from_chars(slot.data(), slot.data() + slot.size(), r.slot);
    auto colon = where.rfind(':');
    if (ec != std::errc{} || ptr != slot.data() + slot.size() || r.slot >= cluster_slots ||
        colon == std::string_view::npos) {
        return std::nullopt;
    }
    auto port = to_port(where.substr(colon + 1));
    std::string_view host = where.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (!port || host == "?" || host.size() > 255) {
        return std::nullopt;
    }
    r.to = {host.empty() ? from.host : std::string(host), *port};
    return r;
}

std::optional<std::vector<slot_range>> parse_cluster_slots(const value& v,
                                                           const redis_endpoint& from) {
    using kind = value::kind;
    if (v.type != kind::array || v.elements.size() > cluster_slots) {
        return std::nullopt;  // more ranges than slots: not a cluster's answer
    }
    std::vector<slot_range> out;
    for (const value& e : v.elements) {
        if (e.type != kind::array || e.elements.size() < 3 || e.elements[0].type != kind::integer ||
            e.elements[1].type != kind::integer || e.elements[2].type != kind::array ||
            e.elements[2].elements.size() < 2) {
            return std::nullopt;
        }
        const std::int64_t first = e.elements[0].integer;
        const std::int64_t last = e.elements[1].integer;
        const value& host = e.elements[2].elements[0];
        const value& port = e.elements[2].elements[1];
        if (first < 0 || last < first || last >= cluster_slots || host.type != kind::string ||
            host.str.size() > 255 || port.type != kind::integer || port.integer <= 0 ||
            port.integer > 65535) {
            return std::nullopt;
        }
        if (host.str == "?") {
            continue;
        }
        out.push_back(
            {static_cast<std::uint16_t>(first),
             static_cast<std::uint16_t>(last),
             {host.str.empty() ? from.host : host.str, static_cast<std::uint16_t>(port.integer)}});
    }
    return out;
}

std::optional<redis_endpoint> parse_master_address(const value& v) {
    if (v.type != value::kind::array || v.elements.size() != 2) {
        return std::nullopt;
    }
    const value& host = v.elements[0];
    const value& port = v.elements[1];
    if (host.type != value::kind::string || port.type != value::kind::string || host.str.empty() ||
        host.str.size() > 255) {
        return std::nullopt;
    }
    auto p = to_port(port.str);
    if (!p) {
        return std::nullopt;
    }
    return redis_endpoint{host.str, *p};
}

bool is_master_role(const value& v) {
    return v.type == value::kind::array && !v.elements.empty() &&
           v.elements[0].type == value::kind::string && v.elements[0].str == "master";
}

std::size_t connected_replicas(const value& v) {
    if (!is_master_role(v) || v.elements.size() < 3 || v.elements[2].type != value::kind::array) {
        return 0;
    }
    return v.elements[2].elements.size();
}

}  // namespace waitroom::state::redis
