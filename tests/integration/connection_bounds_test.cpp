// Client connections no address can pile up: the real daemon with small limits, one address
// (or a few) holding idle keep-alive connections, slow request heads or a malformed chunk line,
// and other visitors (other loopback addresses) who must still be answered at once.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// `threads` workers of `max_connections` client connections each; `limits` are more keys of
// that section (", key: value…").
std::string small_worker_config(const std::string& origin_url, unsigned threads,
                                std::size_t max_connections, const std::string& limits = "") {
    return "admin: {listen: \"\"}\n"
           "listen: [\"127.0.0.1:0\"]\n"
           "origin: {url: \"" +
           origin_url +
           "\", connect_timeout: 2s, timeout: 5s}\n"
           "threads: " +
           std::to_string(threads) +
           "\n"
           "limits: {header_timeout: 30s, keepalive_timeout: 75s, max_connections: " +
           std::to_string(max_connections) + limits +
           "}\n"
           "logging: {level: info}\n";
}

// Opens `n` connections from `source`, each answered once and then kept idle; returns them all
// (those the gateway closed included) and counts the answered ones in `answered`.
std::vector<std::unique_ptr<client_connection>> open_idle(std::uint16_t port, std::size_t n,
                                                          const std::string& source,
                                                          std::size_t& answered) {
    std::vector<std::unique_ptr<client_connection>> out;
    answered = 0;
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(std::make_unique<client_connection>(port, 3s, source));
        if (from_origin(out.back()->get("/hello"))) {
            ++answered;
        }
    }
    return out;
}

class ConnectionBounds : public daemon_test {
  protected:
    // A visitor from `source` on a new connection: answered by the origin within a second.
    void expect_answered_at_once(const std::string& source) {
        const auto t0 = clock::now();
        client_connection other(port_, 5s, source);
        const auto r = other.get("/hello");
        EXPECT_TRUE(from_origin(r)) << source << ": " << describe(r);
        EXPECT_LT(clock::now() - t0, 1s) << source;
    }
};

TEST_F(ConnectionBounds, OneAddressWithMoreIdleConnectionsThanItsCapLeavesOthersAnsweredAtOnce) {
    // Two workers of 20 connections, 4 per client each: 60 idle connections from one address
    // would hold all 40 without the cap.
    start(small_worker_config(origin_.url(), 2, 20, ", max_connections_per_client: 4"));
    std::size_t answered = 0;
    const auto idle = open_idle(port_, 60, "127.0.0.1", answered);
    EXPECT_LE(answered, 8u);  // at most its cap on each worker
    EXPECT_GE(answered, 4u);
    for (int i = 2; i < 6; ++i) {
        expect_answered_at_once("127.0.0." + std::to_string(i));
    }
}

TEST_F(ConnectionBounds, ConnectionsPastTheCapAreClosedAtOnceAndAClosedOneGivesItsPlaceBack) {
    start(small_worker_config(origin_.url(), 1, 100, ", max_connections_per_client: 2"));
    std::size_t answered = 0;
    auto idle = open_idle(port_, 2, "127.0.0.1", answered);
    ASSERT_EQ(answered, 2u);
    client_connection third(port_, 5s, "127.0.0.1");
    const auto t0 = clock::now();
    EXPECT_TRUE(third.closed_by_peer(2s));
    EXPECT_LT(clock::now() - t0, 1s);
    idle.front().reset();  // one of the two closes: its place comes back
    EXPECT_TRUE(poll_until(5s, [&] {
        client_connection again(port_, 2s, "127.0.0.1");
        return from_origin(again.get("/hello"));
    }));
}

TEST_F(ConnectionBounds, NearTheWorkersLimitTheOldestIdleConnectionsGiveWay) {
    // Twelve addresses within their cap, one idle connection each, on a worker of 8: the
    // oldest are closed as the newest come, and a new visitor is still answered at once.
    start(small_worker_config(origin_.url(), 1, 8));
    std::vector<std::unique_ptr<client_connection>> idle;
    for (int i = 0; i < 12; ++i) {
        idle.push_back(
            std::make_unique<client_connection>(port_, 3s, "127.0.1." + std::to_string(i + 1)));
        const auto r = idle.back()->get("/hello");
        ASSERT_TRUE(from_origin(r)) << i << ": " << describe(r);
    }
    expect_answered_at_once("127.0.0.2");
    EXPECT_TRUE(idle.front()->closed_by_peer(2s));
    // The newest idle connection is still open and serves its next request.
    const auto r = idle.back()->get("/hello");
    EXPECT_TRUE(from_origin(r)) << describe(r);
}

TEST_F(ConnectionBounds, AMalformedChunkExtensionGets400WithinASecond) {
    start(small_worker_config(origin_.url(), 1, 100));
    client_connection c(port_, 5s);
    const auto t0 = clock::now();
    ASSERT_TRUE(
        c.write_raw("POST /sink HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5;x=\"unterminated\x01\x7f;;;"));
    const auto r = c.read_response();
    EXPECT_EQ(r.status, 400u) << describe(r);
    EXPECT_LT(clock::now() - t0, 1s);
    EXPECT_TRUE(c.closed_by_peer(3s));
    EXPECT_EQ(origin_.requests(), 0u);  // a small body is read whole first: the origin saw nothing
}

// `n` connections from `source`, each sending 12 KiB of a request head that never ends.
std::vector<std::unique_ptr<client_connection>> start_slow_heads(std::uint16_t port, std::size_t n,
                                                                 const std::string& source) {
    std::vector<std::unique_ptr<client_connection>> out;
    const std::string head =
        "GET /hello HTTP/1.1\r\nHost: shop.test\r\nX-Pad: " + std::string(12 * 1024, 'p');
    for (std::size_t i = 0; i < n; ++i) {
        out.push_back(std::make_unique<client_connection>(port, 10s, source));
        EXPECT_TRUE(out.back()->write_raw(head));
    }
    return out;
}

TEST_F(ConnectionBounds, PastTheHeaderBudgetTheSlowestHeadsGet408WhileOthersAreServed) {
    // 256 KiB holds 16 to 20 unfinished heads of 12 KiB (each in a buffer of 12 to 16 KiB); 24
    // are sent, the first 8 before the others. Each address stays within its cap.
    start(small_worker_config(origin_.url(), 1, 100,
                              ", max_header_bytes: 32KiB, header_buffer_budget: 256KiB"));
    const auto first = start_slow_heads(port_, 8, "127.0.2.1");
    expect_answered_at_once("127.0.0.2");  // the gateway has read the first heads by now
    const auto later = start_slow_heads(port_, 16, "127.0.3.1");
    expect_answered_at_once("127.0.0.3");
    // The later heads were all kept: each, completed now, is served as usual.
    for (std::size_t i = 0; i < later.size(); ++i) {
        EXPECT_EQ(later[i]->available(), 0u) << i;
        ASSERT_TRUE(later[i]->write_raw("\r\n\r\n")) << i;
        const auto r = later[i]->read_response();
        EXPECT_TRUE(from_origin(r)) << i << ": " << describe(r);
    }
    // Of the first heads, those the budget could not hold were answered 408 and closed; the
    // rest are served once complete.
    std::size_t given_up = 0;
    for (std::size_t i = 0; i < first.size(); ++i) {
        if (first[i]->available() > 0) {
            const auto r = first[i]->read_response();
            EXPECT_EQ(r.status, 408u) << i << ": " << describe(r);
            EXPECT_TRUE(first[i]->closed_by_peer(3s)) << i;
            ++given_up;
            continue;
        }
        ASSERT_TRUE(first[i]->write_raw("\r\n\r\n")) << i;
        const auto r = first[i]->read_response();
        EXPECT_TRUE(from_origin(r)) << i << ": " << describe(r);
    }
    EXPECT_GE(given_up, 4u);  // 24 heads of at least 12 KiB: 4 or more past 256 KiB
}

}  // namespace
}  // namespace waitroom::test
