// Several origin servers behind the real waitroomd: balancing, passive health (a server killed
// and restarted), active health checks, and a room that admits nobody new while no server is
// healthy. The servers are in-process test origins on loopback ports; every wait polls with a
// deadline.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"
#include "http_client.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

// `origin: {servers: [...], <settings>}` for the servers at `urls`.
std::string origin_section(const std::vector<std::string>& urls, const std::string& settings) {
    std::ostringstream c;
    c << "origin: {servers: [";
    for (std::size_t i = 0; i < urls.size(); ++i) {
        c << (i > 0 ? ", " : "") << "{url: \"" << urls[i] << "\"}";
    }
    c << "], connect_timeout: 1s, timeout: 2s" << (settings.empty() ? "" : ", ") << settings
      << "}\n";
    return c.str();
}

// A daemon (two workers, admin on a free port) in front of `urls`, with `rooms` (YAML) if any.
std::string servers_config(const std::vector<std::string>& urls, const std::string& settings,
                           const std::string& rooms = "", unsigned threads = 2) {
    return "listen: [\"127.0.0.1:0\"]\n" + origin_section(urls, settings) +
           "admin: {listen: \"127.0.0.1:0\"}\n"
           "threads: " +
           std::to_string(threads) +
           "\n"
           "state: {backend: local, sync_interval: 50ms}\n"
           "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
           "logging: {level: info}\n" +
           rooms;
}

class Origins : public daemon_test {
  protected:
    void start_servers(const std::string& yaml) {
        start(yaml);
        admin_port_ = announced_admin_port();
        ASSERT_NE(admin_port_, 0);
    }

    // waitroom_origin_server_<name>{server="<url>"} on /metrics.
    double server_metric(const std::string& name, const std::string& url) {
        auto r = http_get(admin_port_, "/metrics");
        return metric(r.body, "waitroom_origin_server_" + name + "{server=\"" + url + "\"}");
    }

    bool healthy(const std::string& url) { return server_metric("healthy", url) == 1; }

    // New visitors (no cookie) come until one gets an answer that `wanted`; `last` is the last.
    bool newcomer_until(http_response& last, bool (*wanted)(const http_response&)) {
        return poll_until(5s, [&] {
            cookie_jar newcomer;
            last = newcomer.get(port_, "/hello");
            return wanted(last);
        });
    }

    // A GET of /hello that must be the origin's answer.
    void expect_hello(const char* when) {
        auto r = http_get(port_, "/hello");
        EXPECT_TRUE(from_origin(r)) << when << ": " << describe(r);
    }

    std::uint16_t admin_port_ = 0;
};

TEST_F(Origins, AServerKilledAndRestartedCostsNoVisitorAnErrorAndComesBack) {
    auto second = std::make_unique<test_origin>();
    const std::uint16_t second_port = second->port();
    const std::string second_url = second->url();
    start_servers(servers_config({origin_.url(), second_url},
                                 "balance: round_robin, eject_after: 2, eject_time: 300ms, "
                                 "max_eject_time: 1s"));
    for (int i = 0; i < 10; ++i) {
        expect_hello("both servers up");
    }
    EXPECT_GT(origin_.requests_for("/hello"), 0u);
    EXPECT_GT(second->requests_for("/hello"), 0u);

    second.reset();  // killed: its connections close, its port refuses
    // A request that finds it dead before sending a byte goes to the other server: no visitor
    // sees the failures that eject it, nor any after.
    ASSERT_TRUE(poll_until(10s, [&] {
        expect_hello("one server killed");
        return server_metric("ejections_total", second_url) >= 1;
    }));
    for (int i = 0; i < 20; ++i) {
        expect_hello("one server ejected");
    }
    EXPECT_FALSE(::testing::Test::HasFailure()) << output();

    second = std::make_unique<test_origin>(second_port);
    EXPECT_TRUE(poll_until(10s, [&] {
        expect_hello("server restarted");
        return second->requests_for("/hello") > 0;
    })) << "the restarted server got no request back";
    EXPECT_TRUE(poll_until(5s, [&] { return healthy(second_url); }));
}

TEST_F(Origins, HealthChecksTakeAServerOutAndBringItBack) {
    test_origin second;
    start_servers(servers_config({origin_.url(), second.url()},
                                 "eject_after: 0, health_check: {path: /healthz, interval: "
                                 "100ms, timeout: 100ms, healthy: 2, unhealthy: 2}"));
    ASSERT_TRUE(poll_until(5s, [&] { return second.requests_for("/healthz") >= 2; }))
        << "no health check reached the server";
    EXPECT_TRUE(healthy(second.url()));

    second.set_health(503);
    ASSERT_TRUE(poll_until(5s, [&] { return !healthy(second.url()); })) << output();
    const auto before = second.requests_for("/hello");
    for (int i = 0; i < 20; ++i) {
        expect_hello("one server failing its checks");
    }
    EXPECT_EQ(second.requests_for("/hello"), before) << "a server out of the checks got requests";
    EXPECT_TRUE(output().find("health check failed") != std::string::npos) << output();

    second.set_health(200);
    ASSERT_TRUE(poll_until(5s, [&] { return healthy(second.url()); })) << output();
    EXPECT_TRUE(poll_until(5s, [&] {
        expect_hello("server passing its checks again");
        return second.requests_for("/hello") > before;
    }));
}

TEST_F(Origins, LeastRequestSendsFewerRequestsToASlowServer) {
    test_origin slow;
    slow.set_hello_delay(200ms);
    // One worker: its count of requests in flight is the whole node's.
    start_servers(servers_config({origin_.url(), slow.url()}, "balance: least_request", "", 1));
    std::atomic<int> failures{0};
    std::vector<std::thread> clients;
    for (int t = 0; t < 6; ++t) {
        clients.emplace_back([&] {
            std::optional<client_connection> c;
            c.emplace(port_);
            for (int i = 0; i < 30; ++i) {
                auto r = c->get("/hello");
                if (!from_origin(r)) {
                    ++failures;
                    c.emplace(port_);
                }
            }
        });
    }
    for (auto& t : clients) {
        t.join();
    }
    EXPECT_EQ(failures.load(), 0);
    const auto fast_count = origin_.requests_for("/hello");
    const auto slow_count = slow.requests_for("/hello");
    EXPECT_EQ(fast_count + slow_count, 180u);
    // Round robin would give each half; the slow server holds its requests in flight, so it
    // loses the draws while it does.
    EXPECT_LT(slow_count * 4, fast_count) << "fast " << fast_count << ", slow " << slow_count;
}

// One room on /hello of shop.test; health checks watch both servers.
std::string room_servers_config(const std::vector<std::string>& urls) {
    return servers_config(urls,
                          "eject_after: 0, health_check: {path: /healthz, interval: 100ms, "
                          "timeout: 100ms, healthy: 1, unhealthy: 1}",
                          "rooms:\n  - {name: Shop, host: shop.test, path: /hello, "
                          "total_active_users: 50, new_users_per_minute: 1000, "
                          "session_duration: 5m, json_response_enabled: true}\n");
}

constexpr std::string_view unavailable_notice = "The site is unavailable right now";

TEST_F(Origins,
       WithNoServerHealthyNewVisitorsQueueAndSeeTheNoticeWhileAdmittedOnesKeepTheirPlaces) {
    test_origin second;
    start_servers(room_servers_config({origin_.url(), second.url()}));
    cookie_jar admitted;
    auto first = admitted.get(port_, "/hello");
    ASSERT_TRUE(from_origin(first)) << describe(first);
    ASSERT_NE(admitted.cookie(), "");

    origin_.set_health(503);
    second.set_health(503);
    http_response page;
    ASSERT_TRUE(newcomer_until(page, [](const http_response& r) { return is_queue_page(r); }))
        << "a new visitor was still let in: " << describe(page);
    EXPECT_NE(page.body.find(unavailable_notice), std::string::npos) << page.body.substr(0, 600);
    cookie_jar app;
    auto json = app.get(port_, "/hello", true);
    EXPECT_NE(json.body.find("\"originUnavailable\":true"), std::string::npos) << json.body;

    // The admitted visitor keeps its place: its requests still go to the servers.
    const auto before = origin_.requests_for("/hello") + second.requests_for("/hello");
    auto again = admitted.get(port_, "/hello");
    EXPECT_TRUE(from_origin(again)) << describe(again);
    EXPECT_EQ(origin_.requests_for("/hello") + second.requests_for("/hello"), before + 1);

    second.set_health(200);
    http_response in;
    EXPECT_TRUE(newcomer_until(in, from_origin)) << "admission did not resume: " << describe(in);
    EXPECT_TRUE(from_origin(admitted.get(port_, "/hello")));
}

}  // namespace
}  // namespace waitroom::test
