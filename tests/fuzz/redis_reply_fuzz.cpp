// libFuzzer entry point for the Redis reply decoder: any bytes from the server, read by
// hiredis's reply reader as the client reads them, copied out (from_reply) and decoded as the
// room script's answers (sync grant, top-up, overrides, NOSCRIPT) and as a cluster's or a
// sentinel's (redirections, slot map, master address, ROLE). The reader has the client's
// bounded reply builders (bound_replies). Nothing may crash or allocate past the bound, and the
// replies must be the same whether the bytes arrive at once or in small reads.
// Built by tests/fuzz/run.sh with clang; also replayed by redis_reply_fuzz_replay under g++.

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "redis_protocol.hpp"

namespace {

using namespace waitroom::state;
using redis::value;

bool same(const value& a, const value& b) {
    if (a.type != b.type || a.integer != b.integer || a.str != b.str ||
        a.elements.size() != b.elements.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.elements.size(); ++i) {
        if (!same(a.elements[i], b.elements[i])) {
            return false;
        }
    }
    return true;
}

// The replies in `bytes` fed `step` at a time (0: at once); false when the reader failed.
bool read_replies(std::string_view bytes, std::size_t step, std::vector<value>& out) {
    redisReader* r = redisReaderCreate();
    bool ok = r != nullptr;
    redis::reply_budget budget;
    budget.max = 4096;  // the bound's arithmetic, without allocating up to 8 MiB per input
    if (ok) {
        redis::bound_replies(*r, budget);
    }
    for (std::size_t at = 0; ok && at < bytes.size();) {
        const std::size_t n = step == 0 ? bytes.size() : std::min(step, bytes.size() - at);
        ok = redisReaderFeed(r, bytes.data() + at, n) == REDIS_OK;
        at += n;
        void* reply = nullptr;
        while (ok && (ok = redisReaderGetReply(r, &reply) == REDIS_OK) && reply != nullptr) {
            out.push_back(redis::from_reply(*static_cast<redisReply*>(reply)));
            freeReplyObject(reply);
            reply = nullptr;
        }
    }
    if (r != nullptr) {
        redisReaderFree(r);
    }
    return ok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::vector<value> whole;
    std::vector<value> split;
    const bool whole_ok = read_replies(bytes, 0, whole);
    const bool split_ok = read_replies(bytes, 1 + size % 5, split);
    if (whole_ok && split_ok) {
        if (whole.size() != split.size()) {
            std::abort();
        }
        for (std::size_t i = 0; i < whole.size(); ++i) {
            if (!same(whole[i], split[i])) {
                std::abort();
            }
        }
    }
    for (const value& v : whole) {
        (void)redis::is_noscript(v);
        room_grant g;
        if (!redis::parse_grant(v, "shop", 1'800'000'000'000, g)) {
            // The window lists the room engine walks at every sync stay bounded and ascending.
            const auto& c = g.counts;
            if (g.room != "shop" || c.admitted_windows.size() > max_admitted_windows ||
                c.active_windows.size() > max_active_windows ||
                !std::is_sorted(c.admitted_windows.begin(), c.admitted_windows.end()) ||
                !std::is_sorted(c.active_windows.begin(), c.active_windows.end())) {
                std::abort();
            }
        }
        std::int64_t granted = 0;
        (void)redis::parse_top_up(v, granted);
        room_switch_values sw;
        (void)redis::parse_overrides(v, sw);
        // What a cluster node or a sentinel says about where to go: any answer is either
        // refused or names a usable endpoint and slots in range.
        const redis_endpoint from{"10.0.0.9", 7000};
        if (auto r = redis::parse_redirect(v, from)) {
            if (r->slot >= redis::cluster_slots || r->to.port == 0 || r->to.host.empty()) {
                std::abort();
            }
        }
        if (auto ranges = redis::parse_cluster_slots(v, from)) {
            for (const auto& r : *ranges) {
                if (r.first > r.last || r.last >= redis::cluster_slots || r.master.port == 0 ||
                    r.master.host.empty()) {
                    std::abort();
                }
            }
        }
        if (auto m = redis::parse_master_address(v)) {
            if (m->port == 0 || m->host.empty()) {
                std::abort();
            }
        }
        if (redis::connected_replicas(v) > 0 && !redis::is_master_role(v)) {
            std::abort();
        }
    }
    return 0;
}
