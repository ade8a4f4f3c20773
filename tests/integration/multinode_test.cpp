// Several nodes, one room as whole processes: a real redis-server on a free loopback
// port, three waitroomd nodes sharing it and one cookie key, in front of one in-process origin.
// Visitors keep their own cookie jar and send each request to the next node in turn, as a
// spreading load balancer would. Time-bound behaviour runs under `testing.time_scale`; every
// wait polls for an outcome with a generous deadline, nothing asserts timing.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"
#include "http_client.hpp"
#include "state/redis_fixture.hpp"
#include "support/process.hpp"
#include "support/test_origin.hpp"

namespace waitroom::test {
namespace {

using test::sentinel_set;

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr std::size_t node_count = 3;

// Product time runs 5× faster: a 10 s window (arrival bucket) takes 2 s, a 5 s session ends
// 1–3 s after its last request, and a 200 ms sync interval is one second of product time.
// The nodes are spawned together so that their scaled clocks, which start with each process,
// stay within a fraction of a window of each other.
constexpr double time_scale = 5;
// Holding on for window_steps × 200 ms (more than a window of real time) puts the next arrival
// in a later arrival bucket.
constexpr int window_steps = 12;

// 32 bytes (0x00..0x1f), base64: the one cookie key every node holds.
constexpr std::string_view shared_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

// One visitor with its own cookie jar (the room cookie only), a fresh connection per request;
// the caller says which node gets each request.
// A visitor whose requests may go to any node.
class visitor {
  public:
    http_response get(std::uint16_t port, bool json_accept = false) {
        return jar_.get(port, "/hello", json_accept);
    }

    const std::string& cookie() const { return jar_.cookie(); }  // "name=value", "" before any
    std::string cookie_value() const { return cookie().substr(cookie().find('=') + 1); }

  private:
    cookie_jar jar_;
};

class MultiNode : public ::testing::Test {
  protected:
    struct node {
        std::string config_path;
        std::unique_ptr<daemon> proc;
        std::uint16_t port = 0;
        std::uint16_t admin_port = 0;
    };

    // Starts the three nodes with one room `shop` (`room` adds to its flow mapping), and the
    // rooms of `more_rooms` (YAML list items). Each node has its own id, public and admin
    // listener; the cookie key and the store are shared: redis_, or with `sentinels` set, the
    // master that sentinels_ name.
    void start_nodes(const std::string& room, bool sentinels = false,
                     const std::string& more_rooms = "") {
        std::ostringstream state;
        if (sentinels) {
            sentinels_ = std::make_unique<sentinel_set>();
            state << "state: {backend: redis, url: \"redis://127.0.0.1:1/0\", master_name: "
                  << sentinels_->name() << ", sentinels: [";
            for (std::size_t i = 0; i < 3; ++i) {
                state << (i ? ", " : "") << "\"127.0.0.1:" << sentinels_->sentinel(i).port()
                      << "\"";
            }
            state << "], sync_interval: 200ms, timeout: 400ms}\n";
        } else {
            state << "state: {backend: redis, url: \"redis://127.0.0.1:" << redis_.port()
                  << "/0\", sync_interval: 200ms, timeout: 400ms}\n";
        }
        const std::string key_file = dir_.write("k1.key", std::string(shared_key) + "\n");
        nodes_.resize(node_count);
        for (std::size_t i = 0; i < node_count; ++i) {
            std::ostringstream c;
            c << "listen: [\"127.0.0.1:0\"]\n"
              << "origin: {url: \"" << origin_.url() << "\", connect_timeout: 2s, timeout: 2s}\n"
              << "node: {id: node-" << i + 1 << "}\n"
              << "admin: {listen: \"127.0.0.1:0\"}\n"
              << "threads: 2\n"
              << "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
              << "logging: {level: info}\n"
              << "cookie: {keys: [{id: k1, secret_file: \"" << key_file << "\"}]}\n"
              << state.str() << "testing: {time_scale: " << time_scale << "}\n"
              << "rooms:\n  - {id: shop, name: Shop, host: shop.test, " << room << "}\n"
              << more_rooms;
            nodes_[i].config_path = dir_.write("node-" + std::to_string(i + 1) + ".yaml", c.str());
        }
        // Spawned back to back, waited for afterwards (see time_scale).
        for (auto& n : nodes_) {
            n.proc = std::make_unique<daemon>(n.config_path, dir_.path());
        }
        static const std::regex admin_re(R"(admin listening on http://127\.0\.0\.1:(\d+))");
        for (std::size_t i = 0; i < node_count; ++i) {
            auto& n = nodes_[i];
            n.port = n.proc->wait_listening();
            ASSERT_NE(n.port, 0) << "node " << i + 1 << " did not start:\n" << n.proc->output();
            ASSERT_TRUE(n.proc->process().wait_for_output("admin listening on", 10s))
                << n.proc->output();
            std::smatch m;
            std::string text = n.proc->output();
            ASSERT_TRUE(std::regex_search(text, m, admin_re)) << text;
            n.admin_port = static_cast<std::uint16_t>(std::stoi(m[1].str()));
        }
        // Every node is ready and has synced with the store (each sees all three nodes)
        // before the first visitor comes.
        ASSERT_TRUE(poll_until(15s, 50ms, [&] { return all_ready(true); }))
            << "not every node became ready:\n"
            << nodes_[0].proc->output();
        ASSERT_TRUE(poll_until(15s, 50ms, [&] {
            for (std::size_t i = 0; i < node_count; ++i) {
                auto r = admin(i, http::verb::get, "/rooms/shop/status");
                auto j = json::parse(r.body, nullptr, false);
                if (j.is_discarded() || j.value("nodes", 0) != static_cast<int>(node_count)) {
                    return false;
                }
            }
            return true;
        })) << "the nodes do not all see each other in the store";
    }

    // The public port of the node that gets the next request (round-robin over all visitors).
    std::uint16_t next_port() { return nodes_[rr_++ % node_count].port; }
    http_response send(visitor& v) { return v.get(next_port()); }

    http_response admin(std::size_t i, http::verb method, const std::string& target,
                        const std::string& body = "") {
        client_connection c(nodes_[i].admin_port);
        http::request<http::string_body> req{method, target, 11};
        if (!body.empty()) {
            req.set(http::field::content_type, "application/json");
            req.body() = body;
            req.prepare_payload();
        }
        return c.request(std::move(req));
    }

    // True when every node's /readyz answers 200 (`ready`) or 503 (not ready).
    bool all_ready(bool ready) {
        for (std::size_t i = 0; i < node_count; ++i) {
            if (admin(i, http::verb::get, "/readyz").status != (ready ? 200u : 503u)) {
                return false;
            }
        }
        return true;
    }

    bool all_running() {
        for (auto& n : nodes_) {
            if (!n.proc->process().running()) {
                return false;
            }
        }
        return true;
    }

    // The fields of a visitor's cookie as `waitroomd cookie` decodes them with node 1's config.
    json decode(const visitor& v) {
        auto r = run_to_exit(waitroomd_path(), {"cookie", "-c", nodes_[0].config_path, "--room",
                                                "shop", v.cookie_value()});
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        auto j = json::parse(r.out, nullptr, false);
        EXPECT_FALSE(j.is_discarded()) << r.out;
        return j;
    }

    // Members are destroyed in reverse: the nodes stop before the origin and the store.
    redis_server redis_;
    std::unique_ptr<sentinel_set> sentinels_;
    test_origin origin_;
    temp_dir dir_;
    std::vector<node> nodes_;
    std::size_t rr_ = 0;
};

// (a) Fifteen visitors arrive and keep refreshing, each request on the next node. The three
// nodes together never let more than five in, and they do let five in: each node's own lease
// plus top-ups fill the room rather than queueing early.
TEST_F(MultiNode, NeverAdmitsMoreVisitorsThanTheRoomLimitSummedOverTheNodes) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 5, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 20s"));
    std::vector<visitor> v(15);
    std::vector<bool> in(v.size(), false);
    std::size_t admitted = 0;
    std::size_t passed = 0;  // responses that came from the origin
    bool stable = false;
    int rounds_full = 0;
    poll_until(20s, 100ms, [&] {
        for (std::size_t i = 0; i < v.size(); ++i) {
            auto r = send(v[i]);
            if (from_origin(r)) {
                ++passed;
                if (!in[i]) {
                    in[i] = true;
                    ++admitted;
                }
            } else if (is_queue_page(r)) {
                EXPECT_FALSE(in[i]) << "admitted visitor " << i + 1 << " was queued again";
            } else {
                ADD_FAILURE() << "visitor " << i + 1 << ": " << describe(r);
            }
            EXPECT_LE(admitted, 5u) << "more visitors admitted than the room holds";
        }
        // Once full, a few more rounds show that nobody else gets in.
        rounds_full = admitted == 5 ? rounds_full + 1 : 0;
        stable = rounds_full >= 5;
        return stable || ::testing::Test::HasFailure();
    });
    EXPECT_EQ(admitted, 5u) << "the nodes queued visitors while the room had room";
    EXPECT_TRUE(stable);
    EXPECT_EQ(origin_.requests(), passed) << "a queued request reached the origin";
    EXPECT_TRUE(all_running());
}

// (b) Node 1 admits two visitors and queues a third; nodes 2 and 3 read the same cookies: the
// admitted keep their session, the queued one keeps its arrival bucket and ticket.
TEST_F(MultiNode, HonoursOnEveryNodeTheCookieAnotherNodeSet) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 2, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 20s"));
    const std::uint16_t first = nodes_[0].port;
    visitor a, b, c;
    // Nobody queues while the room has room: the first answer of each already lets them in.
    auto ra0 = a.get(first);
    ASSERT_TRUE(from_origin(ra0)) << describe(ra0);
    auto rb0 = b.get(first);
    ASSERT_TRUE(from_origin(rb0)) << describe(rb0);
    const std::size_t before = origin_.requests();
    auto q = c.get(first);
    ASSERT_TRUE(is_queue_page(q)) << describe(q);
    ASSERT_NE(c.cookie(), "");
    const json a0 = decode(a);
    const json c0 = decode(c);
    ASSERT_TRUE(a0.value("admitted", false)) << a0.dump();
    ASSERT_FALSE(c0.value("admitted", true)) << c0.dump();

    for (std::size_t i = 1; i < node_count; ++i) {
        SCOPED_TRACE("node " + std::to_string(i + 1));
        const std::uint16_t port = nodes_[i].port;
        auto ra = a.get(port);
        EXPECT_TRUE(from_origin(ra)) << describe(ra);
        auto rb = b.get(port);
        EXPECT_TRUE(from_origin(rb)) << describe(rb);
        auto rc = c.get(port);
        EXPECT_TRUE(is_queue_page(rc)) << describe(rc);

        const json an = decode(a);
        EXPECT_EQ(an.value("accepted_at", 0), a0.value("accepted_at", -1))
            << "the session started again: " << an.dump();
        const json cn = decode(c);
        EXPECT_FALSE(cn.value("admitted", true)) << cn.dump();
        EXPECT_EQ(cn.value("bucket", 0), c0.value("bucket", -1)) << "lost its place";
        EXPECT_EQ(cn.value("ticket", 0), c0.value("ticket", -1)) << "lost its ticket";
    }
    EXPECT_EQ(origin_.requests(), before + 4) << "the queued visitor reached the origin";
}

// Slots are not parked in idle nodes' leases: in an empty room of two, the first new visitor
// of any node gets in at once, wherever the other one went, and only the third one waits.
TEST_F(MultiNode, QueuesNobodyWhileTheRoomHasRoomWhicheverNodeTheyReach) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 2, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 20s"));
    visitor a, b, c;
    auto ra = a.get(nodes_[2].port);
    EXPECT_TRUE(from_origin(ra)) << "node 3 queued the first visitor: " << describe(ra);
    auto rb = b.get(nodes_[0].port);
    EXPECT_TRUE(from_origin(rb)) << "node 1 queued the second visitor: " << describe(rb);
    auto rc = c.get(nodes_[1].port);
    EXPECT_TRUE(is_queue_page(rc))
        << "node 2 let a third visitor into a room of two: " << describe(rc);
}

// (c) One place. Three visitors queue in distinct arrival windows, each arriving on a
// different node, and refresh on every node in turn (the latest arrival first, so a node that
// ignored the shared admission front would let it in). As each admitted session ends they get
// in in arrival order.
TEST_F(MultiNode, AdmitsVisitorsQueuedOnDifferentNodesInArrivalOrder) {
    // Sessions of 15 s product time (3 s real): a loaded machine that stalls the holder's
    // 200 ms refresh loop for over a second must not end its session mid-test.
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 1, new_users_per_minute: 1000, session_duration: 15s, "
                    "refresh_interval: 20s"));
    visitor holder;
    auto h0 = send(holder);
    ASSERT_TRUE(from_origin(h0)) << "queued in an empty room: " << describe(h0);

    std::vector<visitor> queued(3);
    for (std::size_t i = 0; i < queued.size(); ++i) {
        auto r = send(queued[i]);
        ASSERT_TRUE(is_queue_page(r)) << "visitor " << i + 1 << ": " << describe(r);
        // The next arrival falls in a later window. Meanwhile the holder keeps its session
        // (renewed as windows pass) and the queued keep their place.
        for (int step = 0; step < window_steps; ++step) {
            std::this_thread::sleep_for(200ms);  // time passing on purpose (see window_steps)
            auto h = send(holder);
            ASSERT_TRUE(from_origin(h)) << "the admitted visitor lost its place: " << describe(h);
            for (std::size_t j = 0; j <= i; ++j) {
                auto w = send(queued[j]);
                ASSERT_TRUE(is_queue_page(w))
                    << "visitor " << j + 1 << " got in while the room was held: " << describe(w);
            }
        }
    }
    const std::size_t before = origin_.requests();

    // The holder goes idle now; so does each visitor once in, so that its session ends.
    std::vector<std::size_t> order;
    std::vector<bool> in(queued.size(), false);
    bool done = poll_until(45s, 100ms, [&] {
        for (std::size_t k = queued.size(); k-- > 0;) {
            if (in[k]) {
                continue;
            }
            auto r = send(queued[k]);
            if (from_origin(r)) {
                in[k] = true;
                order.push_back(k + 1);
            } else if (!is_queue_page(r)) {
                ADD_FAILURE() << "visitor " << k + 1 << ": " << describe(r);
                return true;
            }
        }
        return order.size() == queued.size();
    });
    ASSERT_TRUE(done) << "only " << order.size() << " of 3 got in";
    EXPECT_EQ(order, (std::vector<std::size_t>{1, 2, 3}));
    EXPECT_EQ(origin_.requests(), before + 3) << "queued refreshes reached the origin";
}

// (d) Redis dies mid-run and comes back on the same port. Meanwhile no node crashes, every
// /readyz says not ready, the admitted keep passing on every node and new admissions stay
// within the room's free places; afterwards the nodes are ready again and admit again.
TEST_F(MultiNode, RidesOutARedisOutageAndRecoversWhenItReturns) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 5, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 20s"));
    std::vector<visitor> admitted(3);
    for (std::size_t i = 0; i < admitted.size(); ++i) {
        auto r = send(admitted[i]);
        ASSERT_TRUE(from_origin(r)) << "visitor " << i + 1 << ": " << describe(r);
    }
    // The store has the three sessions before it goes.
    ASSERT_TRUE(poll_until(10s, 50ms, [&] {
        auto r = admin(0, http::verb::get, "/rooms/shop/status");
        auto j = json::parse(r.body, nullptr, false);
        return !j.is_discarded() && j.value("estimated_total_active_users", 0) == 3;
    }));

    redis_.kill();
    ASSERT_TRUE(poll_until(15s, 50ms, [&] { return all_ready(false); }))
        << "a node still says ready without its store";
    for (std::size_t i = 0; i < node_count; ++i) {
        auto r = admin(i, http::verb::get, "/readyz");
        EXPECT_NE(r.body.find("degraded"), std::string::npos) << r.body;
    }

    // Several sync intervals without the store: the admitted pass on every node, new visitors
    // get at most the two free places (their share of the allowance), nobody gets a 5xx.
    std::vector<visitor> fresh(9);
    std::size_t fresh_in = 0;
    std::vector<bool> in(fresh.size(), false);
    for (int round = 0; round < 10; ++round) {
        for (auto& v : admitted) {
            for (std::size_t i = 0; i < node_count; ++i) {
                auto r = v.get(nodes_[i].port);
                EXPECT_TRUE(from_origin(r)) << "node " << i + 1 << ": " << describe(r);
            }
        }
        for (std::size_t k = 0; k < fresh.size(); ++k) {
            auto r = send(fresh[k]);
            if (from_origin(r) && !in[k]) {
                in[k] = true;
                ++fresh_in;
            } else if (!from_origin(r)) {
                EXPECT_TRUE(is_queue_page(r)) << describe(r);
            }
        }
        // The pace of the rounds: ten of them span several sync intervals without the store.
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_LE(fresh_in, 2u) << "degraded nodes admitted past the room's free places";
    ASSERT_TRUE(all_running()) << nodes_[0].proc->output();
    for (std::size_t i = 0; i < node_count; ++i) {
        EXPECT_EQ(admin(i, http::verb::get, "/healthz").status, 200u) << "node " << i + 1;
    }

    redis_.start();
    ASSERT_TRUE(poll_until(15s, 50ms, [&] { return all_ready(true); }))
        << "a node stayed not ready after the store returned:\n"
        << nodes_[0].proc->output();
    // The store came back empty; the nodes re-report the 3 + fresh_in sessions. Admissions
    // resume while a place is free, and only then: some waiting or new visitor gets in.
    auto one_more_in = [&] {
        for (std::size_t k = 0; k < fresh.size(); ++k) {
            if (!in[k] && from_origin(send(fresh[k]))) {
                return true;
            }
        }
        visitor late;
        return from_origin(send(late));
    };
    if (fresh_in < 2) {
        EXPECT_TRUE(poll_until(15s, 100ms, one_more_in)) << "no admission after the store returned";
    } else {
        ASSERT_TRUE(poll_until(15s, 50ms, [&] {
            auto r = admin(0, http::verb::get, "/rooms/shop/status");
            auto j = json::parse(r.body, nullptr, false);
            return !j.is_discarded() && j.value("estimated_total_active_users", 0) == 5;
        })) << "the returned store does not count the five sessions";
        for (int round = 0; round < 5; ++round) {
            EXPECT_FALSE(one_more_in()) << "admitted past the limit after the store returned";
        }
    }
    EXPECT_TRUE(all_running());
}

// An operator overwrites one of room `news`'s keys with a string: Redis fails that room's
// script (WRONGTYPE) at every sync while it runs `shop`'s. Each node says so once in its log,
// counts it in waitroom_room_store_failures_total{room="news"} and shows news degraded, stays
// ready, and shop's counts keep moving on every node. Once the room's keys are deleted, news
// syncs again by itself.
TEST_F(MultiNode, RidesOutAClobberedRoomKeyInThatRoomAloneAndRecoversWhenItIsFixed) {
    ASSERT_NO_FATAL_FAILURE(start_nodes(
        "total_active_users: 50, new_users_per_minute: 1000, session_duration: 5m", false,
        "  - {id: news, name: News, host: news.test, total_active_users: 50, "
        "new_users_per_minute: 1000, session_duration: 5m}\n"));
    const std::vector<std::string> news_keys = {"admitted", "active",    "waiting", "nodes",
                                                "meta",     "overrides", "revoked"};
    ASSERT_EQ(redis_.cli("SET 'wr:{news}:active' clobbered"), "OK");
    auto status = [&](std::size_t i, const std::string& room) {
        auto j = json::parse(admin(i, http::verb::get, "/rooms/" + room + "/status").body, nullptr,
                             false);
        return j.is_discarded() ? json::object() : j;
    };
    auto failures = [&](std::size_t i) {
        return metric(admin(i, http::verb::get, "/metrics").body,
                      R"(waitroom_room_store_failures_total{room="news"})");
    };
    ASSERT_TRUE(poll_until(10s, 50ms, [&] {
        for (std::size_t i = 0; i < node_count; ++i) {
            if (failures(i) < 3 || !status(i, "news").value("degraded", false)) {
                return false;
            }
        }
        return true;
    })) << nodes_[0].proc->output();
    EXPECT_TRUE(all_ready(true)) << "one room failing is no store outage";
    EXPECT_FALSE(status(0, "shop").value("degraded", true));

    // Shop goes on: visitors on every node are counted in the store, and every node sees them.
    std::vector<visitor> shoppers(6);
    for (auto& v : shoppers) {
        auto r = send(v);
        ASSERT_TRUE(from_origin(r)) << describe(r);
    }
    EXPECT_TRUE(poll_until(10s, 50ms, [&] {
        for (std::size_t i = 0; i < node_count; ++i) {
            if (status(i, "shop").value("estimated_total_active_users", 0) != 6) {
                return false;
            }
        }
        return true;
    })) << status(0, "shop").dump();

    for (const auto& k : news_keys) {
        redis_.cli("DEL 'wr:{news}:" + k + "'");
    }
    EXPECT_TRUE(poll_until(10s, 50ms, [&] {
        for (std::size_t i = 0; i < node_count; ++i) {
            if (status(i, "news").value("degraded", true)) {
                return false;
            }
        }
        return true;
    })) << nodes_[0].proc->output();
    for (auto& n : nodes_) {
        const std::string log = n.proc->output();
        const auto count = [&](const std::string& what) {
            std::size_t c = 0;
            for (auto at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) {
                ++c;
            }
            return c;
        };
        EXPECT_EQ(count("room news: the state store failed its sync"), 1u) << log;
        EXPECT_EQ(count("room news: the state store applies its syncs again"), 1u) << log;
        EXPECT_EQ(count("state store unreachable"), 0u) << log;
    }
    EXPECT_TRUE(all_running());
}

// Redis unreachable but not restarted (frozen: it keeps its memory), under load. The nodes ride
// the outage out on their allowances; once each has synced again none of them queues a visitor
// while the room has a place (the store keeps places free only for a node that has not reported
// since, and none is left), and through it all the room never holds more than its limit.
TEST_F(MultiNode, QueuesNobodyBelowTheLimitOnceTheNodesAreBackFromAnOutage) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 8, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 20s"));
    std::vector<visitor> crowd(24);
    std::vector<bool> in(crowd.size(), false);
    std::size_t admitted = 0;
    auto offer = [&](std::size_t k) {
        auto r = send(crowd[k]);
        if (!from_origin(r)) {
            EXPECT_TRUE(is_queue_page(r)) << describe(r);
            return false;
        }
        if (!in[k]) {
            in[k] = true;
            ++admitted;
        }
        return true;
    };
    auto store_counts = [&](std::size_t n) {
        auto r = admin(0, http::verb::get, "/rooms/shop/status");
        auto j = json::parse(r.body, nullptr, false);
        return !j.is_discarded() &&
               j.value("estimated_total_active_users", -1) == static_cast<int>(n);
    };
    for (std::size_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(offer(k)) << "visitor " << k + 1;
    }
    ASSERT_TRUE(poll_until(10s, 50ms, [&] { return store_counts(3); }));

    redis_.pause();
    ASSERT_TRUE(poll_until(15s, 50ms, [&] { return all_ready(false); }))
        << "a node still says ready without its store";
    for (int round = 0; round < 10; ++round) {
        for (std::size_t k = 3; k < crowd.size(); ++k) {
            offer(k);
        }
        std::this_thread::sleep_for(100ms);  // the rounds span several sync intervals
    }
    EXPECT_LE(admitted, 8u) << "the degraded nodes admitted past the limit";

    redis_.resume();
    ASSERT_TRUE(poll_until(15s, 50ms, [&] { return all_ready(true); }))
        << "a node stayed not ready after the store returned:\n"
        << nodes_[0].proc->output();
    ASSERT_TRUE(poll_until(10s, 50ms, [&] { return store_counts(admitted); }))
        << "the store does not count the sessions admitted in the outage";
    // Every node has reported: each next visitor in arrival order gets in while a place is
    // free, on whichever node it reaches (at once, or within a few sync intervals when the
    // place is still in another node's lease), and nobody past the limit does.
    int late = 0;
    for (std::size_t k = 3; k < crowd.size(); ++k) {
        if (in[k]) {
            continue;
        }
        if (admitted >= 8) {
            EXPECT_FALSE(offer(k)) << "admitted past the limit";
        } else if (!offer(k)) {
            ++late;
            EXPECT_TRUE(poll_until(3s, 100ms, [&] { return offer(k); }))
                << "queued with " << admitted << " of 8 places taken";
        }
    }
    EXPECT_LE(late, 1) << "visitors queued below the limit after the store came back";
    EXPECT_EQ(admitted, 8u);
    EXPECT_TRUE(poll_until(10s, 50ms, [&] { return store_counts(8); }));
    EXPECT_TRUE(all_running());
}

// Behind Redis Sentinel, the master SIGKILLed under load: the nodes ride out the failover
// degraded (the admitted keep passing; the two free places are not given from the allowance,
// which is a third of them per node, rounded down), then follow the sentinels to the promoted
// replica and fill the two places, and no more.
TEST_F(MultiNode, FollowsASentinelFailoverUnderLoadAndFillsTheRoomExactly) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 4, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 5s",
                    true));
    std::vector<visitor> admitted(2);
    for (std::size_t i = 0; i < admitted.size(); ++i) {
        // Syncs come every 200 ms and time out after 400 ms, and under time_scale a lease lapses
        // 400 ms (of wall time) after the last sync that succeeded: on a loaded machine one slow
        // sync (Sentinel's WAIT for the replica) leaves a node degraded for a moment, and it
        // then queues a new visitor (degraded mode, README) until its Refresh. What this test
        // checks is the failover, not that moment; a first try that was queued is logged.
        http_response r;
        int tries = 0;
        const bool in = poll_until(5s, 100ms, [&] {
            ++tries;
            return from_origin(r = send(admitted[i]));
        });
        if (in && tries > 1) {
            std::cout << "visitor " << i + 1 << " got in at try " << tries << "\n";
        }
        ASSERT_TRUE(in) << "visitor " << i + 1 << ": " << describe(r) << "\n"
                        << nodes_[0].proc->output();
    }
    // Every node knows both sessions: its allowance while degraded is then a third of the two
    // free places, rounded down (none).
    ASSERT_TRUE(poll_until(10s, 50ms, [&] {
        for (std::size_t i = 0; i < node_count; ++i) {
            auto r = admin(i, http::verb::get, "/rooms/shop/status");
            auto j = json::parse(r.body, nullptr, false);
            if (j.is_discarded() || j.value("estimated_total_active_users", 0) != 2) {
                return false;
            }
        }
        return true;
    }));

    const auto killed = std::chrono::steady_clock::now();
    sentinels_->server(0).kill();
    ASSERT_TRUE(poll_until(15s, 20ms, [&] { return all_ready(false); }))
        << "a node still says ready without its store";
    const auto degraded = std::chrono::steady_clock::now();

    std::vector<visitor> fresh(8);
    std::vector<bool> in(fresh.size(), false);
    std::size_t fresh_in = 0;
    std::optional<std::chrono::steady_clock::time_point> first_in;
    std::optional<std::chrono::steady_clock::time_point> filled;
    std::optional<std::chrono::steady_clock::time_point> ready_again;
    poll_until(40s, 100ms, [&] {
        for (auto& v : admitted) {
            auto r = send(v);
            EXPECT_TRUE(from_origin(r)) << "an admitted visitor was stopped: " << describe(r);
        }
        std::size_t before = fresh_in;
        for (std::size_t k = 0; k < fresh.size(); ++k) {
            auto r = send(fresh[k]);
            if (from_origin(r) && !in[k]) {
                in[k] = true;
                ++fresh_in;
                if (!first_in) {
                    first_in = std::chrono::steady_clock::now();
                }
                if (fresh_in == 2) {
                    filled = std::chrono::steady_clock::now();
                }
            } else if (!from_origin(r)) {
                EXPECT_TRUE(is_queue_page(r)) << describe(r);
            }
        }
        // A place given in a round after which no node is ready yet came from the allowance.
        bool any_ready = false;
        for (std::size_t i = 0; i < node_count; ++i) {
            any_ready = any_ready || admin(i, http::verb::get, "/readyz").status == 200u;
        }
        EXPECT_TRUE(any_ready || fresh_in == before) << "a place was given while degraded";
        if (!ready_again && all_ready(true)) {
            ready_again = std::chrono::steady_clock::now();
        }
        // Filled, and a few syncs more, so that a place given twice would show.
        return filled && std::chrono::steady_clock::now() - *filled > 3s;
    });
    ASSERT_TRUE(ready_again) << "the nodes did not follow the failover:\n"
                             << nodes_[0].proc->output();
    EXPECT_EQ(sentinels_->named_master(), sentinels_->server(1).port());
    EXPECT_EQ(fresh_in, 2u) << "the two free places were not filled exactly; the store's nodes: "
                            << sentinels_->server(1).cli("HGETALL wr:{shop}:nodes")
                            << "\nstatus: " << admin(0, http::verb::get, "/rooms/shop/status").body
                            << admin(1, http::verb::get, "/rooms/shop/status").body
                            << admin(2, http::verb::get, "/rooms/shop/status").body;
    ASSERT_TRUE(first_in);
    EXPECT_TRUE(all_running());
    if (::testing::Test::HasFailure()) {
        for (auto& n : nodes_) {
            std::cout << n.proc->output() << "\n----\n";
        }
    }
    auto ms = [&](auto t) {
        return std::chrono::duration_cast<std::chrono::milliseconds>(t - killed).count();
    };
    std::cout << "[ failover ] after the master's SIGKILL: degraded at " << ms(degraded)
              << " ms, every node ready again at " << ms(*ready_again) << " ms, first admission at "
              << ms(*first_in) << " ms, room full again at " << (filled ? ms(*filled) : -1)
              << " ms\n";
}

// Redis killed and restarted empty (no persistence): the store forgets the five sessions and
// every lease. Each node sees the room's epoch change at its next sync and re-reports the
// windows it counted, so the store counts five again within a sync and the room stays full:
// no new visitor gets in, the admitted keep passing. Before, the count stayed at zero (and the
// room took five more) until the sessions expired.
TEST_F(MultiNode, CountsEveryoneAgainWithinASyncWhenRedisRestartsEmpty) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 5, new_users_per_minute: 1000, session_duration: 5m, "
                    "refresh_interval: 20s"));
    std::vector<visitor> admitted(5);
    for (std::size_t i = 0; i < admitted.size(); ++i) {
        auto r = send(admitted[i]);
        ASSERT_TRUE(from_origin(r)) << "visitor " << i + 1 << ": " << describe(r);
    }
    auto active_on = [&](std::size_t i) {
        auto r = admin(i, http::verb::get, "/rooms/shop/status");
        auto j = json::parse(r.body, nullptr, false);
        return j.is_discarded() ? -1 : j.value("estimated_total_active_users", -1);
    };
    ASSERT_TRUE(poll_until(10s, 50ms, [&] { return active_on(0) == 5; }));

    // What the store itself counts: each window at least zero, as the store reads it.
    auto in_store = [&] {
        std::istringstream in(redis_.cli("HVALS wr:{shop}:active"));
        std::int64_t sum = 0;
        for (std::int64_t n = 0; in >> n;) {
            sum += std::max<std::int64_t>(0, n);
        }
        return sum;
    };

    redis_.kill();
    redis_.start();  // empty: the fixture's server keeps nothing on disk
    // The nodes' next syncs fill the empty store again: five active in the store, seen by every
    // node. (The nodes' snapshots from before the restart say five too, so the store is asked:
    // the first node to re-report alone holds only its own sessions.)
    ASSERT_TRUE(poll_until(10s, 50ms,
                           [&] {
                               return in_store() == 5 && active_on(0) == 5 && active_on(1) == 5 &&
                                      active_on(2) == 5;
                           }))
        << "the store did not count the sessions again: " << in_store() << " in the store\n"
        << nodes_[0].proc->output();

    // The room is still full: new visitors queue on every node, the admitted pass.
    std::vector<visitor> fresh(6);
    for (int round = 0; round < 3; ++round) {
        for (std::size_t k = 0; k < fresh.size(); ++k) {
            auto r = send(fresh[k]);
            EXPECT_TRUE(is_queue_page(r)) << "fresh visitor " << k + 1 << ": " << describe(r);
        }
        for (std::size_t k = 0; k < admitted.size(); ++k) {
            auto r = send(admitted[k]);
            EXPECT_TRUE(from_origin(r)) << "admitted visitor " << k + 1 << ": " << describe(r);
        }
    }
    // Node 2's snapshot is a sync behind the check-ins that just moved windows: it shows the
    // five again within a sync or two.
    EXPECT_TRUE(poll_until(5s, 50ms, [&] { return active_on(1) == 5; })) << active_on(1);
    EXPECT_TRUE(all_running());
}

// abuse_action: infinite_queue across nodes. A visitor flagged on node 1 keeps its earlier
// cookie back and replays it on every node in turn: the earlier ticket is refused on every node,
// and neither cookie is ever admitted, while the freed place goes to a polite visitor.
TEST_F(MultiNode, AFlaggedVisitorsEarlierCookieReplayedOnEveryNodeIsNeverAdmitted) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 1, new_users_per_minute: 1000, session_duration: 10s, "
                    "refresh_interval: 20s, abuse_action: infinite_queue"));
    visitor holder;
    ASSERT_TRUE(from_origin(holder.get(nodes_[0].port)));
    cookie_jar bot;
    ASSERT_TRUE(is_queue_page(bot.get(nodes_[0].port, "/hello")));
    ASSERT_TRUE(is_queue_page(bot.get(nodes_[0].port, "/hello")));
    const std::string pre_flag = bot.cookie();
    for (int i = 0; i < 200; ++i) {
        auto r = bot.get(nodes_[0].port, "/hello");
        ASSERT_TRUE(is_queue_page(r)) << i << ": " << describe(r);
    }
    ASSERT_TRUE(nodes_[0].proc->process().wait_for_output("flagged for refreshing far faster", 5s))
        << nodes_[0].proc->output();
    visitor polite;
    ASSERT_TRUE(is_queue_page(send(polite)));
    int replays = 0;
    bool polite_in = false;
    bool done = poll_until(60s, 20ms, [&] {
        cookie_jar copy;
        copy.set_cookie(pre_flag);
        auto r = copy.get(next_port(), "/hello");
        ++replays;
        if (from_origin(r)) {
            ADD_FAILURE() << "the cookie kept from before the flag was admitted after " << replays
                          << " replays";
            return true;
        }
        if (from_origin(bot.get(next_port(), "/hello"))) {
            ADD_FAILURE() << "the flagged cookie was admitted";
            return true;
        }
        if (replays % 10 == 0) {
            polite_in = from_origin(send(polite));
        }
        return polite_in;
    });
    EXPECT_TRUE(done && polite_in) << "the polite visitor was never admitted";
    for (std::size_t i = 0; i < 3 * node_count; ++i) {
        cookie_jar copy;
        copy.set_cookie(pre_flag);
        EXPECT_FALSE(from_origin(copy.get(nodes_[i % node_count].port, "/hello"))) << i;
    }
    EXPECT_TRUE(all_running());
}

// A run-time change made on one node's admin listener reaches every node through the store.
TEST_F(MultiNode, AppliesAnAdminPatchOnOneNodeToEveryNode) {
    ASSERT_NO_FATAL_FAILURE(
        start_nodes("total_active_users: 100, new_users_per_minute: 1000, session_duration: 5m"));
    const std::uint16_t third = nodes_[2].port;
    visitor early;
    ASSERT_TRUE(from_origin(early.get(third)));

    auto r = admin(0, http::verb::patch, "/rooms/shop", R"({"queue_all": true})");
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_TRUE(poll_until(10s, 100ms, [&] {
        visitor v;
        return is_queue_page(v.get(third));
    })) << "node 3 still admits new visitors";
    auto again = early.get(third);
    EXPECT_TRUE(from_origin(again)) << "an admitted visitor lost access: " << describe(again);

    r = admin(0, http::verb::patch, "/rooms/shop", R"({"queue_all": false})");
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_TRUE(poll_until(10s, 100ms, [&] {
        visitor v;
        return from_origin(v.get(third));
    })) << "node 3 kept queueing new visitors";
}

}  // namespace
}  // namespace waitroom::test
