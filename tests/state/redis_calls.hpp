#pragma once
// Store calls for the Redis store's tests against real servers: reports, options and one call
// run to completion on an io_context.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "state/redis_fixture.hpp"
#include "waitroom/state/error.hpp"
#include "waitroom/state/redis_store.hpp"
#include "waitroom/state/store.hpp"

namespace waitroom::state::redis_test {

using namespace std::chrono_literals;
using waitroom::test::redis_server;
using waitroom::test::run_until;

inline room::room_limits limits(std::int64_t active, std::int64_t per_minute) {
    room::room_limits l;
    l.total_active_users = active;
    l.new_users_per_minute = per_minute;
    l.session_ms = 300'000;
    l.abandon_after_ms = 25'000;
    return l;
}

// A report from a busy node (a lease follows recent demand: a node that asked for no slot in
// the last interval leases none).
inline room_report report(const room::room_limits& l, const std::string& room = "shop",
                   std::int64_t demand = 100) {
    room_report r;
    r.room = room;
    r.limits = l;
    r.deltas.demand = demand;
    return r;
}

inline node_report node(const std::string& id, const std::string& dc, std::int64_t now,
                 std::vector<room_report> rooms, std::int64_t ttl = 3000) {
    node_report n;
    n.node_id = id;
    n.datacenter = dc;
    n.now_ms = now;
    n.node_ttl_ms = ttl;
    n.rooms = std::move(rooms);
    return n;
}

inline redis_options options(const redis_server& srv) {
    redis_options o;
    o.host = "127.0.0.1";
    o.port = srv.port();
    o.timeout = 500ms;
    o.reconnect_min = 20ms;
    o.reconnect_max = 200ms;
    return o;
}

// One store call, run to completion on `ioc` (the local store answers inline).
inline sync_result call_sync(boost::asio::io_context& ioc, store& s, node_report r) {
    std::optional<sync_result> out;
    s.sync(std::move(r), [&](sync_result res) { out = std::move(res); });
    EXPECT_TRUE(run_until(ioc, [&] { return out.has_value(); }));
    return out ? std::move(*out) : sync_result{make_error_code(errc::timeout), {}};
}

inline top_up_result call_top_up(boost::asio::io_context& ioc, store& s, top_up_request r) {
    std::optional<top_up_result> out;
    s.top_up(std::move(r), [&](top_up_result res) { out = res; });
    EXPECT_TRUE(run_until(ioc, [&] { return out.has_value(); }));
    return out ? *out : top_up_result{make_error_code(errc::timeout), 0};
}

// As the sync task does after a failed sync: the same report (same batch) again, every
// `pause`, until it is answered or `limit` passed. The store applies a batch once, however often
// it comes.
inline sync_result sync_until_answered(boost::asio::io_context& ioc, store& s,
                                       const node_report& r,
                                       std::chrono::milliseconds limit = 20s,
                                       std::chrono::milliseconds pause = 20ms) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
        auto res = call_sync(ioc, s, r);
        if (!res.ec || std::chrono::steady_clock::now() >= end) {
            return res;
        }
        std::this_thread::sleep_for(pause);
    }
}

}  // namespace waitroom::state::redis_test
