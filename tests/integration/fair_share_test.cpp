// Nothing one client can hold forever: waitroomd with a tiny origin pool, one client that
// uploads at a trickle, reads at a trickle or opens tunnels, and a second client (another
// loopback address) that must still get through.

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// One worker (one origin pool) of `max_connections` origin connections; `limits` and `origin`
// are more keys of those sections (", key: value…").
std::string tiny_pool_config(const std::string& origin_url, std::size_t max_connections,
                             const std::string& limits, const std::string& origin = "") {
    return "admin: {listen: \"\"}\n"
           "listen: [\"127.0.0.1:0\"]\n"
           "origin: {url: \"" +
           origin_url + "\", connect_timeout: 2s, timeout: 5s, max_connections: " +
           std::to_string(max_connections) + ", pool_wait_timeout: 20s" + origin +
           "}\n"
           "threads: 1\n"
           "limits: {header_timeout: 2s, body_timeout: 30s" +
           limits +
           "}\n"
           "logging: {level: info}\n";
}

// Sends `bytes` a little at a time until a response is there to read (or `limit` passes).
void trickle_until_answered(client_connection& c, std::size_t bytes_per_step,
                            clock::duration limit) {
    const std::string step(bytes_per_step, 'x');
    const auto end = clock::now() + limit;
    while (c.available() == 0 && clock::now() < end && c.write_raw(step)) {
        std::this_thread::sleep_for(50ms);  // the pace of the trickle, not a wait for a result
    }
}

class FairShare : public daemon_test {};

TEST_F(FairShare, CutsABodyPastItsDeadlineHoweverSteadilyItComes) {
    // 1 B/s would let this body stream for days; the deadline ends it after a second.
    start(tiny_pool_config(origin_.url(), 1,
                           ", request_buffer: 16KiB, body_min_rate: 1, body_deadline: 1s"));
    client_connection slow(port_, 15s);
    ASSERT_TRUE(slow.connected());
    const auto t0 = clock::now();
    ASSERT_TRUE(
        slow.write_raw("POST /sink HTTP/1.1\r\nHost: shop.test\r\n"
                       "Content-Length: 1048576\r\n\r\n" +
                       std::string(16 * 1024, 'x')));
    trickle_until_answered(slow, 1024, 10s);
    auto r = slow.read_response();
    EXPECT_EQ(r.status, 408u) << describe(r);
    EXPECT_LT(clock::now() - t0, 5s);
    EXPECT_TRUE(slow.closed_by_peer(5s));
    EXPECT_EQ(origin_.requests(), 1u);  // streaming had begun: the origin saw part of it
    // The origin connection it held is free for someone else.
    client_connection next(port_, 10s, "127.0.0.2");
    auto n = next.get("/hello");
    EXPECT_TRUE(from_origin(n)) << describe(n);
}

TEST_F(FairShare, ASlowReaderLosesItsOriginConnectionToTheNextClient) {
    start(tiny_pool_config(origin_.url(), 1, ", response_min_rate: 1MiB"));
    // A reader with a small window that never reads: the relay stalls once the socket
    // buffers are full, and the origin connection would be held for as long as it likes.
    client_connection slow(port_, 30s, "127.0.0.1", 4096);
    ASSERT_TRUE(slow.connected());
    ASSERT_TRUE(slow.write_raw("GET /bytes?n=268435456 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.requests() == 1; }));
    const auto t0 = clock::now();
    client_connection next(port_, 20s, "127.0.0.2");
    auto r = next.get("/hello");
    const auto waited = clock::now() - t0;
    EXPECT_TRUE(from_origin(r)) << describe(r);
    EXPECT_LT(waited, 10s);
    // The slow reader's connection was cut (short of the body), its origin connection dropped
    // rather than pooled mid-response: the next client came on a new one.
    EXPECT_LT(slow.read_until_close(10s).size(), 268435456u);
    EXPECT_EQ(origin_.connections(), 2u);
}

TEST_F(FairShare, AFastReaderOfALargeResponseIsNotCut) {
    start(tiny_pool_config(origin_.url(), 1, ", response_min_rate: 1MiB"));
    client_connection c(port_, 60s);
    ASSERT_TRUE(c.connected());
    auto r = c.download("/bytes?n=" + std::to_string(64u << 20), [](std::uint64_t) {});
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, std::to_string(64u << 20));
}

constexpr std::string_view websocket_upgrade =
    "GET /ws HTTP/1.1\r\nHost: shop.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

// The pool holds two origin connections, one client may hold one of them.
std::string two_and_one(const std::string& origin_url, const std::string& limits) {
    return tiny_pool_config(origin_url, 2, limits, ", max_connections_per_client: 1");
}

TEST_F(FairShare, OneClientsSlowUploadsCannotBlockASecondClient) {
    // Without the cap, two uploads this slow would hold both origin connections for a minute.
    start(two_and_one(origin_.url(),
                      ", request_buffer: 16KiB, body_min_rate: 1, body_deadline: 60s"));
    const std::string upload =
        "POST /sink HTTP/1.1\r\nHost: shop.test\r\nContent-Length: "
        "1048576\r\n\r\n" +
        std::string(20 * 1024, 'x');
    client_connection first(port_, 10s);
    ASSERT_TRUE(first.write_raw(upload));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.requests() == 1; }));
    // More uploads from the same address are refused at once, not queued.
    for (int i = 0; i < 3; ++i) {
        client_connection more(port_, 10s);
        ASSERT_TRUE(more.write_raw(upload));
        auto r = more.read_response();
        EXPECT_EQ(r.status, 503u) << describe(r);
        EXPECT_EQ(r.headers[http::field::retry_after], "1");
    }
    const auto t0 = clock::now();
    client_connection other(port_, 10s, "127.0.0.2");
    auto r = other.get("/hello");
    EXPECT_TRUE(from_origin(r)) << describe(r);
    EXPECT_LT(clock::now() - t0, 2s);
    EXPECT_EQ(origin_.requests(), 2u);  // the first upload and the other client's request
    EXPECT_EQ(first.available(), 0u);   // the first upload is still streaming, untouched
}

TEST_F(FairShare, OneClientsTunnelsCannotBlockASecondClientAndAClosedOneIsGivenBack) {
    start(two_and_one(origin_.url(), ""));
    auto tunnel = std::make_unique<client_connection>(port_, 10s);
    ASSERT_TRUE(tunnel->write_raw(websocket_upgrade));
    auto up = tunnel->read_response();
    ASSERT_EQ(up.status, 101u) << describe(up);
    client_connection second(port_, 10s);
    ASSERT_TRUE(second.write_raw(websocket_upgrade));
    auto refused = second.read_response();
    EXPECT_EQ(refused.status, 503u) << describe(refused);
    client_connection other(port_, 10s, "127.0.0.2");
    auto r = other.get("/hello");
    EXPECT_TRUE(from_origin(r)) << describe(r);
    // The tunnel closes: its client's slot comes back.
    tunnel.reset();
    EXPECT_TRUE(poll_until(5s, [&] {
        client_connection again(port_, 5s);
        return again.write_raw(websocket_upgrade) && again.read_response().status == 101;
    }));
}

TEST_F(FairShare, TunnelsFromManyClientsLeaveHalfThePoolToEveryoneElse) {
    // Four origin connections, one per client: without a bound on tunnels, four addresses
    // would hold them all.
    start(tiny_pool_config(origin_.url(), 4, "", ", max_connections_per_client: 1"));
    std::vector<std::unique_ptr<client_connection>> tunnels;
    for (int i = 0; i < 4; ++i) {
        tunnels.push_back(std::make_unique<client_connection>(
            port_, 10s, "127.0.0." + std::to_string(10 + i)));
        ASSERT_TRUE(tunnels.back()->write_raw(websocket_upgrade));
        auto r = tunnels.back()->read_response();
        if (i < 2) {
            EXPECT_EQ(r.status, 101u) << i << ": " << describe(r);
        } else {
            EXPECT_EQ(r.status, 503u) << i << ": " << describe(r);
            EXPECT_EQ(r.headers[http::field::retry_after], "5");
            EXPECT_NE(r.body.find("WebSocket"), std::string::npos) << r.body;
        }
    }
    // Plain requests from two more clients at once still find connections, without waiting.
    client_connection a(port_, 10s, "127.0.0.20"), b(port_, 10s, "127.0.0.21");
    ASSERT_TRUE(a.write_raw("GET /slow?ms=500 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    const auto t0 = clock::now();
    auto rb = b.get("/hello");
    EXPECT_TRUE(from_origin(rb)) << describe(rb);
    EXPECT_LT(clock::now() - t0, 2s);
    EXPECT_EQ(a.read_response().status, 200u);
    // A tunnel that closes gives its place back.
    tunnels[0].reset();
    EXPECT_TRUE(poll_until(5s, [&] {
        client_connection again(port_, 5s, "127.0.0.30");
        return again.write_raw(websocket_upgrade) && again.read_response().status == 101;
    }));
}

TEST_F(FairShare, OneClientsSlowReadsCannotBlockASecondClient) {
    // No response_min_rate: the cap alone keeps the second origin connection free.
    start(two_and_one(origin_.url(), ", response_min_rate: 0"));
    client_connection reader(port_, 10s, "127.0.0.1", 4096);
    ASSERT_TRUE(reader.write_raw("GET /bytes?n=268435456 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    ASSERT_TRUE(poll_until(5s, [&] { return origin_.requests() == 1; }));
    client_connection more(port_, 10s, "127.0.0.1", 4096);
    ASSERT_TRUE(more.write_raw("GET /bytes?n=268435456 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    auto refused = more.read_response();
    EXPECT_EQ(refused.status, 503u) << describe(refused);
    client_connection other(port_, 10s, "127.0.0.2");
    auto r = other.get("/hello");
    EXPECT_TRUE(from_origin(r)) << describe(r);
}

TEST_F(FairShare, ABodyPastTheBufferBudgetStreamsInsteadOfBeingBuffered) {
    // Room for one 64 KiB buffer (48 KiB past its relay piece) and no more.
    start(tiny_pool_config(origin_.url(), 4,
                           ", request_buffer: 64KiB, request_buffer_budget: 48KiB"));
    const std::string head = "POST /sink HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 65536\r\n";
    client_connection buffered(port_, 10s);
    ASSERT_TRUE(buffered.write_raw(head + "Expect: 100-continue\r\n\r\n"));
    // The 100 goes out as the body's reading (and its buffer) begins.
    ASSERT_EQ(buffered.read_response().status, 100u);
    ASSERT_TRUE(buffered.write_raw(std::string(1000, 'x')));
    client_connection streamed(port_, 10s, "127.0.0.2");
    ASSERT_TRUE(streamed.write_raw(head + "\r\n" + std::string(30000, 'x')));
    // The second body is not complete, yet the origin has it: it streams.
    EXPECT_TRUE(poll_until(5s, [&] { return origin_.requests() == 1; }));
    ASSERT_TRUE(streamed.write_raw(std::string(65536 - 30000, 'x')));
    auto s = streamed.read_response();
    EXPECT_EQ(s.status, 200u) << describe(s);
    EXPECT_EQ(s.body, "65536");
    ASSERT_TRUE(buffered.write_raw(std::string(65536 - 1000, 'x')));
    auto b = buffered.read_response();
    EXPECT_EQ(b.status, 200u) << describe(b);
    EXPECT_EQ(b.body, "65536");
}

}  // namespace
}  // namespace waitroom::test
