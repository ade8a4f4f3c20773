// The data plane end to end in one process: a gateway worker on its own thread in front of the
// test origin, both on 127.0.0.1 with ports from port 0, driven by a synchronous client.
#include "waitroom/gateway/worker.hpp"

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "head_parser.hpp"
#include "support/poll.hpp"
#include "support/test_certificates.hpp"
#include "support/test_client.hpp"
#include "support/test_origin.hpp"

namespace waitroom::gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using test::test_client;

// A running worker in front of `origin`; the config may be adjusted before start.
class gateway_fixture {
  public:
    explicit gateway_fixture(const test::test_origin& origin,
                             const std::function<void(config::config&)>& adjust = {},
                             std::shared_ptr<metrics::metric_set> metrics = nullptr) {
        auto cfg = std::make_shared<config::config>();
        cfg->origin.url = origin.url();
        cfg->origin.host = "127.0.0.1";
        cfg->origin.port = origin.port();
        cfg->origin.connect_timeout = std::chrono::seconds(2);
        cfg->origin.timeout = std::chrono::seconds(5);
        cfg->limits.header_timeout = std::chrono::seconds(5);
        if (adjust) {
            adjust(*cfg);
        }
        ctx_ = std::make_shared<shared_context>(cfg, std::make_shared<util::system_clock>());
        ctx_->set_metrics(std::move(metrics));  // before the worker, as server/ does
        worker_ = std::make_unique<worker>(ioc_, ctx_, 0);
    }

    void set_filter(std::shared_ptr<request_filter> f) { ctx_->set_request_filter(std::move(f)); }

    void start(std::optional<config::tls_certificate> tls = std::nullopt,
               bool proxy_protocol = false) {
        config::listener l;
        if (tls) {
            l.tls = config::tls_settings{};
            l.tls->certificates.push_back(*tls);
        }
        l.proxy_protocol = proxy_protocol;
        worker_->start({tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}}, {l});
        port_ = worker_->local_endpoints().at(0).port();
        thread_ = std::thread([this] { ioc_.run(); });
    }

    ~gateway_fixture() {
        run_on_worker([this] { worker_->close_all(); });
        ioc_.stop();
        if (thread_.joinable()) {
            thread_.join();
        }
        worker_.reset();
    }

    template <class F>
    void run_on_worker(F f) {
        if (!thread_.joinable()) {
            return;
        }
        std::promise<void> done;
        asio::post(ioc_, [&] {
            f();
            done.set_value();
        });
        done.get_future().wait();
    }

    void drain() {
        run_on_worker([this] { worker_->drain(); });
    }

    std::size_t open_connections() const { return worker_->open_connections(); }
    std::uint16_t port() const { return port_; }

  private:
    asio::io_context ioc_{1};
    // Keeps run() going while the worker has nothing to do (after a drain closed everything),
    // so run_on_worker always finds the thread there to run its task.
    asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
    std::shared_ptr<shared_context> ctx_;
    std::unique_ptr<worker> worker_;
    std::thread thread_;
    std::uint16_t port_ = 0;
};

class Proxy : public ::testing::Test {
  protected:
    void start(const std::function<void(config::config&)>& adjust = {},
               std::shared_ptr<metrics::metric_set> metrics = nullptr) {
        gw_ = std::make_unique<gateway_fixture>(origin_, adjust, std::move(metrics));
        gw_->start();
    }
    test::test_origin origin_;
    std::unique_ptr<gateway_fixture> gw_;
};

TEST_F(Proxy, ForwardsGetAndReturnsTheOriginsBody) {
    start();
    test_client c{gw_->port()};
    auto res = c.get("/hello");
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "hello, world\n");
    EXPECT_EQ(origin_.last_request().method, "GET");
}

TEST_F(Proxy, ForwardsPostBody) {
    start();
    test_client c{gw_->port()};
    test::request req{http::verb::post, "/echo", 11};
    req.body() = "some posted bytes";
    auto res = c.send(req);
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "some posted bytes");
    EXPECT_EQ(origin_.last_request().header("Content-Length"), "17");
}

TEST_F(Proxy, ReusesOneOriginConnectionAcrossRequestsAndClients) {
    start();
    {
        test_client c{gw_->port()};
        for (int i = 0; i < 25; ++i) {
            ASSERT_EQ(c.get("/hello").body(), "hello, world\n");
        }
    }
    for (int i = 0; i < 25; ++i) {
        test_client c{gw_->port()};
        ASSERT_EQ(c.get("/hello").result_int(), 200u);
    }
    EXPECT_EQ(origin_.requests(), 50u);
    EXPECT_EQ(origin_.connections(), 1u);
}

TEST_F(Proxy, StreamsAChunkedRequestBody) {
    start();
    test_client c{gw_->port()};
    c.write_raw(
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n");
    auto res = c.read();
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "hello, world");
    EXPECT_EQ(origin_.last_request().header("Transfer-Encoding"), "chunked");
    EXPECT_EQ(origin_.last_request().body_bytes, 12u);
}

TEST_F(Proxy, RelaysAChunkedResponse) {
    start();
    test_client c{gw_->port()};
    auto res = c.get("/chunked");
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_TRUE(res.chunked());
    EXPECT_EQ(res.body(), "chunk-0\nchunk-1\nchunk-2\nchunk-3\nchunk-4\n");
}

TEST_F(Proxy, AnswersHeadWithTheLengthAndNoBody) {
    start();
    test_client c{gw_->port()};
    test::request head{http::verb::head, "/bytes?n=100", 11};
    auto res = c.send(head, true);
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res[http::field::content_length], "100");
    // The connection stays usable: no stray body bytes were sent.
    EXPECT_EQ(c.get("/hello").body(), "hello, world\n");
}

// An HTTP/1.1 client waiting for 100 Continue gets it; an HTTP/1.0 one sends its body without
// waiting and gets none (RFC 9110 §10.1.1).
TEST_F(Proxy, SendsContinueToHttp11ClientsThatWaitForIt) {
    start();
    for (const char* version : {"HTTP/1.1", "HTTP/1.0"}) {
        const bool waits = std::string_view(version) == "HTTP/1.1";
        test_client c{gw_->port()};
        c.write_raw(std::string("POST /echo ") + version +
                    "\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n" +
                    (waits ? "" : "ping"));
        if (waits) {
            EXPECT_EQ(c.read_header_text().rfind("HTTP/1.1 100 Continue\r\n", 0), 0u);
            c.write_raw("ping");
            auto res = c.read();
            EXPECT_EQ(res.result_int(), 200u);
            EXPECT_EQ(res.body(), "ping");
        } else {
            EXPECT_EQ(c.read_header_text().rfind("HTTP/1.0 200 ", 0), 0u);
        }
    }
}

TEST_F(Proxy, StreamsLargeBodiesBothWays) {
    start();
    constexpr std::size_t size = 20u << 20;
    test_client c{gw_->port()};
    test::request up{http::verb::post, "/sink", 11};
    up.body().assign(size, 'x');
    auto res = c.send(up);
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), std::to_string(size));

    auto down = c.get("/bytes?n=" + std::to_string(size));
    ASSERT_EQ(down.body().size(), size);
    EXPECT_EQ(down.body()[0], 'a');
    EXPECT_EQ(down.body()[size - 1], static_cast<char>('a' + (size - 1) % (16 * 1024) % 26));
}

TEST_F(Proxy, RejectsOversizedHeadersWith431) {
    start([](config::config& c) { c.limits.max_header_bytes = 1024; });
    test_client c{gw_->port()};
    test::request req{http::verb::get, "/hello", 11};
    req.set("X-Big", std::string(4000, 'b'));
    EXPECT_EQ(c.send(req).result_int(), 431u);
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, RejectsOversizedBodiesWith413) {
    start([](config::config& c) { c.limits.max_body_bytes = 1000; });
    {
        test_client c{gw_->port()};
        test::request req{http::verb::post, "/sink", 11};
        req.body().assign(2000, 'x');
        EXPECT_EQ(c.send(req).result_int(), 413u);
        EXPECT_TRUE(c.closed_by_server());
    }
    // Chunked: the limit is found while streaming.
    test_client c{gw_->port()};
    c.write_raw(
        "POST /sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3e8\r\n" +
        std::string(1000, 'y') + "\r\n3e8\r\n" + std::string(1000, 'y') + "\r\n0\r\n\r\n");
    EXPECT_EQ(c.read().result_int(), 413u);
}

TEST_F(Proxy, AnswersSlowHeadersWith408AndCloses) {
    start([](config::config& c) { c.limits.header_timeout = std::chrono::milliseconds(300); });
    test_client c{gw_->port()};
    c.write_raw("GET /hello HTTP/1.1\r\nHost: x\r\n");
    EXPECT_EQ(c.read().result_int(), 408u);
    EXPECT_TRUE(c.closed_by_server());
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, ClosesIdleKeepAliveConnections) {
    start([](config::config& c) { c.limits.keepalive_timeout = std::chrono::milliseconds(200); });
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    EXPECT_TRUE(c.closed_by_server());
}

TEST_F(Proxy, KeepsAKeepAliveConnectionOpenPastAnEarlierHeaderDeadline) {
    // The header timer armed for the first request (short) must give way to the keep-alive
    // deadline (long) of the wait that follows, not close the idle connection early.
    start([](config::config& c) {
        c.limits.header_timeout = std::chrono::milliseconds(150);
        c.limits.keepalive_timeout = std::chrono::seconds(5);
    });
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    // Deliberately past the 150 ms header deadline: a timer left armed would have fired by now.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    EXPECT_EQ(gw_->open_connections(), 1u);
}

class AmbiguousFraming : public Proxy, public ::testing::WithParamInterface<std::string> {};

TEST_P(AmbiguousFraming, IsRefusedWith400AndNeverForwarded) {
    start();
    test_client c{gw_->port()};
    c.write_raw(GetParam());
    EXPECT_EQ(c.read().result_int(), 400u);
    EXPECT_TRUE(c.closed_by_server());
    EXPECT_FALSE(origin_.saw_any_request());
}

INSTANTIATE_TEST_SUITE_P(
    Proxy, AmbiguousFraming,
    ::testing::Values(
        std::string("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
        "POST /echo HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: "
        "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\nhello",
        "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
        "chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\nhello",
        "GET /hello HTTP/1.1\r\nHost: x\r\nX-Evil: a\rb\r\n\r\n",
        std::string("GET /hello HTTP/1.1\r\nHost: x\r\nX-Evil: a\0b\r\n\r\n", 45)));

TEST_F(Proxy, Answers502WhenTheOriginIsDown) {
    // A port bound and never listened on, held for the whole test: connections to it are
    // refused, and no other test running beside this one can take it (a port released at once
    // was, once: this test then reached someone's listener).
    asio::io_context io;
    tcp::socket held{io};
    held.open(tcp::v4());
    held.bind({asio::ip::make_address("127.0.0.1"), 0});
    const std::uint16_t dead_port = held.local_endpoint().port();
    start([&](config::config& c) {
        c.origin.port = dead_port;
        c.origin.url = "http://x";
    });
    test_client c{gw_->port()};
    auto res = c.get("/hello");
    EXPECT_EQ(res.result_int(), 502u);
    EXPECT_NE(res.body().find("502"), std::string::npos);
    // The connection survives a bodyless failure.
    EXPECT_EQ(c.get("/hello").result_int(), 502u);
}

TEST_F(Proxy, Answers504WhenTheOriginIsSlow) {
    start([](config::config& c) { c.origin.timeout = std::chrono::milliseconds(200); });
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/slow?ms=3000").result_int(), 504u);
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
}

TEST_F(Proxy, Answers502WhenTheOriginDropsTheConnection) {
    start();
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/drop").result_int(), 502u);
}

TEST_F(Proxy, RetriesAStalePooledConnectionOnce) {
    start();
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    origin_.close_idle_connections();
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    EXPECT_EQ(origin_.connections(), 2u);
}

TEST_F(Proxy, ChecksAPooledConnectionBeforeSendingABodyOnIt) {
    // A POST is not retried, so a pooled connection the origin has closed must be noticed
    // before the request goes out on it.
    start();
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    origin_.close_idle_connections();
    // A connection whose response was still going out closes once its handler loops: wait for
    // that close before the POST (a POST racing a close in flight fails, as with nginx).
    ASSERT_TRUE(
        test::poll_until(std::chrono::seconds(5), [&] { return origin_.open_connections() == 0; }));
    test::request req{http::verb::post, "/echo", 11};
    req.body() = "posted after the origin closed";
    auto res = c.send(req);
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "posted after the origin closed");
    EXPECT_EQ(origin_.connections(), 2u);
}

TEST_F(Proxy, CountsOpenOriginConnectionsAndHowRequestsReachedThem) {
    auto m = std::make_shared<metrics::metric_set>(1);
    start({}, m);
    {
        test_client c{gw_->port()};
        for (int i = 0; i < 3; ++i) {
            ASSERT_EQ(c.get("/hello").result_int(), 200u);
        }
    }
    auto text = m->text();
    EXPECT_NE(text.find("waitroom_origin_connections 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("waitroom_origin_requests_total{connection=\"new\"} 1\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("waitroom_origin_requests_total{connection=\"reused\"} 2\n"),
              std::string::npos)
        << text;

    // A stale pooled connection: the attempt on it, then the retry on a new one; the stale
    // one is no longer counted as open.
    origin_.close_idle_connections();
    test_client c{gw_->port()};
    ASSERT_EQ(c.get("/hello").result_int(), 200u);
    text = m->text();
    EXPECT_NE(text.find("waitroom_origin_connections 1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("waitroom_origin_requests_total{connection=\"new\"} 2\n"),
              std::string::npos)
        << text;

    gw_->drain();  // closes the idle pooled connection
    EXPECT_NE(m->text().find("waitroom_origin_connections 0\n"), std::string::npos);
}

TEST_F(Proxy, TunnelsWebSocketAfterTheOriginAccepts) {
    start();
    asio::io_context io;
    beast::websocket::stream<tcp::socket> ws{io};
    ws.next_layer().connect({asio::ip::make_address("127.0.0.1"), gw_->port()});
    ws.handshake("127.0.0.1", "/ws");
    ws.write(asio::buffer(std::string("ping through the proxy")));
    beast::flat_buffer buf;
    ws.read(buf);
    EXPECT_EQ(beast::buffers_to_string(buf.data()), "ping through the proxy");
    EXPECT_EQ(origin_.last_request().header("Upgrade"), "websocket");
    ws.close(beast::websocket::close_code::normal);
}

TEST_F(Proxy, StripsOtherUpgrades) {
    start();
    test_client c{gw_->port()};
    test::request req{http::verb::get, "/hello", 11};
    req.set(http::field::upgrade, "h2c");
    req.set(http::field::connection, "Upgrade, HTTP2-Settings");
    req.set("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA");
    auto res = c.send(req);
    EXPECT_EQ(res.result_int(), 200u);
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.count("Upgrade"), 0u);
    EXPECT_EQ(seen.count("HTTP2-Settings"), 0u);
}

TEST_F(Proxy, DropsHopByHopHeadersAndSetsForwardedOnes) {
    start();
    test_client c{gw_->port()};
    test::request req{http::verb::get, "/hello", 11};
    req.set(http::field::host, "shop.example.com");
    req.set(http::field::connection, "keep-alive, X-Hop");
    req.set("X-Hop", "secret");
    req.set(http::field::keep_alive, "timeout=5");
    req.set(http::field::proxy_authorization, "Basic Zm9vOmJhcg==");
    req.set(http::field::te, "trailers");
    req.set("X-Forwarded-For", "198.51.100.1");
    req.set("X-Kept", "yes");
    EXPECT_EQ(c.send(req).result_int(), 200u);
    auto seen = origin_.last_request();
    // origin.host_header defaults to client: the origin sees the visitor's Host.
    EXPECT_EQ(seen.header("Host"), "shop.example.com");
    // The peer is not a trusted proxy: its X-Forwarded-For is replaced, not appended to.
    EXPECT_EQ(seen.header("X-Forwarded-For"), "127.0.0.1");
    EXPECT_EQ(seen.header("X-Forwarded-Proto"), "http");
    EXPECT_EQ(seen.header("X-Forwarded-Host"), "shop.example.com");
    EXPECT_EQ(seen.header("X-Kept"), "yes");
    for (auto name : {"Connection", "X-Hop", "Keep-Alive", "Proxy-Authorization", "TE"}) {
        EXPECT_EQ(seen.count(name), 0u) << name;
    }
}

TEST_F(Proxy, PrependsTheOriginBasePath) {
    start([](config::config& c) { c.origin.base_path = "/app"; });
    test_client c{gw_->port()};
    c.get("/hello?x=1");
    EXPECT_EQ(origin_.last_request().target, "/app/hello?x=1");
    // The origin gets the canonical path the room saw, the base path before it.
    c.get("/%68ello//x/..;p?x=%7e");
    EXPECT_EQ(origin_.last_request().target, "/app/hello/?x=%7e");
}

TEST_F(Proxy, SendsTheOriginsHostWhenHostHeaderIsOrigin) {
    start([](config::config& c) { c.origin.host_header = config::host_header_mode::origin; });
    test_client c{gw_->port()};
    test::request req{http::verb::get, "/hello", 11};
    req.set(http::field::host, "Shop.Example.com.:8080");
    EXPECT_EQ(c.send(req).result_int(), 200u);
    auto seen = origin_.last_request();
    EXPECT_EQ(seen.header("Host"), "127.0.0.1:" + std::to_string(origin_.port()));
    EXPECT_EQ(seen.header("X-Forwarded-Host"), "shop.example.com:8080");
}

TEST_F(Proxy, ServesPipelinedRequestsInOrder) {
    start();
    test_client c{gw_->port()};
    c.write_raw(
        "GET /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /status?code=204 HTTP/1.1\r\nHost: x\r\n\r\n"
        "GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(c.read().body(), "hello, world\n");
    EXPECT_EQ(c.read().result_int(), 204u);
    EXPECT_EQ(c.read().body().substr(0, 7), "chunk-0");
}

// The client's socket is read only when epoll reports bytes after a short read (edge_read):
// bytes that come while the gateway is busy elsewhere (a pipelined request sent while the
// first waits on the origin) and a head that arrives in pieces must still be read.
TEST_F(Proxy, ReadsRequestsThatArriveWhileBusyOrInPieces) {
    start();
    test_client c{gw_->port()};
    c.write_raw("GET /slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n");
    // The second request goes out once the first is at the origin, which holds it for 300 ms.
    ASSERT_TRUE(test::poll_until(std::chrono::seconds(5), [&] { return origin_.requests() == 1; }));
    c.write_raw("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    auto first = c.read();
    EXPECT_EQ(first.body(), "slow\n");
    EXPECT_EQ(c.read().body(), "hello, world\n");

    for (const char* piece : {"GET /hel", "lo HTTP/1.1\r\nHo", "st: x\r\n", "\r\n"}) {
        c.write_raw(piece);
        // The pace of the pieces, so that each arrives on its own: not a wait for an outcome.
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    EXPECT_EQ(c.read().body(), "hello, world\n");
    EXPECT_EQ(c.get("/hello").body(), "hello, world\n");  // and the connection goes on
}

// Ends of stream that come right behind the last bytes (the same epoll event): an origin's body
// delimited by its close, and a client that half-closes after its keep-alive request. Both are
// seen at once, not after a timeout.
TEST_F(Proxy, SeesAnEndOfStreamThatComesWithTheLastBytes) {
    start([](config::config& c) {
        c.limits.body_timeout = std::chrono::seconds(30);
        c.limits.keepalive_timeout = std::chrono::seconds(30);
    });
    const auto t0 = std::chrono::steady_clock::now();
    test_client c{gw_->port()};
    auto res = c.get("/until-close");
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "body until close\n");

    std::size_t before = 0;
    gw_->run_on_worker([&] { before = gw_->open_connections(); });
    test_client h{gw_->port()};
    // The request and its FIN must find the gateway's first read on h already queued. The
    // worker opens the session and queues that read in one handler, so a count taken on the
    // worker's own thread that includes h comes after both.
    ASSERT_TRUE(test::poll_until(std::chrono::seconds(5), [&] {
        std::size_t open = 0;
        gw_->run_on_worker([&] { open = gw_->open_connections(); });
        return open == before + 1;
    }));
    // Corked, the request and the FIN leave in one segment.
    const int one = 1;
    ASSERT_EQ(::setsockopt(h.socket().native_handle(), IPPROTO_TCP, TCP_CORK, &one, sizeof one), 0);
    h.write_raw("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    h.socket().shutdown(asio::socket_base::shutdown_send);
    EXPECT_EQ(h.read().body(), "hello, world\n");
    EXPECT_TRUE(h.closed_by_server());
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10))
        << "waited for a timeout";
}

// Interim responses (103 Early Hints) are not relayed; the answer after them is, however many
// come at once.
TEST_F(Proxy, SkipsInterimResponsesBeforeTheAnswer) {
    start([](config::config& c) { c.origin.timeout = std::chrono::seconds(20); });
    test_client c{gw_->port()};
    for (const char* target : {"/early-hints?n=1", "/early-hints?n=3000"}) {
        auto res = c.get(target);
        EXPECT_EQ(res.result_int(), 200u) << target;
        EXPECT_EQ(res.body(), "hinted") << target;
        EXPECT_EQ(res.count(http::field::link), 0u) << target;
    }
    // An origin that closes right behind its hints: a 502 at once, not a 504 after the timeout.
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(c.get("/early-hints?n=1&close=1").result_int(), 502u);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

// A filter that answers /queue from memory and lets the rest pass with a cookie, and strips the
// origin's command header.
class sample_filter : public request_filter {
  public:
    void on_request(const request_head& req, const request_info&, completion done) override {
        if (req.target() == "/queue") {
            return done(filter_result::respond(
                202, {{"Content-Type", "text/html"}, {"Cache-Control", "no-store"}},
                "<p>you are in line</p>"));
        }
        auto r = filter_result::pass();
        r.headers.emplace_back("Set-Cookie", "_cfwaitingroom=abc; Path=/; HttpOnly");
        done(std::move(r));
    }
    void on_response(response_head& res, const std::shared_ptr<void>&) override {
        if (res.count("Cf-Waiting-Room-Command") > 0) {
            res.erase("Cf-Waiting-Room-Command");
            ++commands;
        }
    }
    int commands = 0;
};

TEST_F(Proxy, LetsTheFilterAnswerFromMemory) {
    auto filter = std::make_shared<sample_filter>();
    start();
    gw_->set_filter(filter);
    test_client c{gw_->port()};
    auto res = c.get("/queue");
    EXPECT_EQ(res.result_int(), 202u);
    EXPECT_EQ(res.body(), "<p>you are in line</p>");
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, LetsTheFilterAddAndStripResponseHeaders) {
    auto filter = std::make_shared<sample_filter>();
    start();
    gw_->set_filter(filter);
    test_client c{gw_->port()};
    auto res = c.get("/headers?Cf-Waiting-Room-Command=revoke&X-Other=1");
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res[http::field::set_cookie], "_cfwaitingroom=abc; Path=/; HttpOnly");
    EXPECT_EQ(res.count("Cf-Waiting-Room-Command"), 0u);
    EXPECT_EQ(res["X-Other"], "1");
    gw_->run_on_worker([&] { EXPECT_EQ(filter->commands, 1); });
}

TEST_F(Proxy, DrainFinishesInFlightRequestsThenCloses) {
    start();
    test_client idle{gw_->port()};
    EXPECT_EQ(idle.get("/hello").result_int(), 200u);
    test_client busy{gw_->port()};
    busy.write_raw("GET /slow?ms=500 HTTP/1.1\r\nHost: x\r\n\r\n");
    // Wait until the slow request has reached the origin, then drain.
    while (origin_.last_request().target != "/slow?ms=500") {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(gw_->open_connections(), 2u);
    gw_->drain();
    auto res = busy.read();
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "slow\n");
    EXPECT_TRUE(busy.closed_by_server());
    EXPECT_TRUE(idle.closed_by_server());
}

// A throwaway self-signed certificate for CN=localhost.
config::tls_certificate make_self_signed(const std::filesystem::path& dir) {
    auto files = test::write_self_signed(dir, "cert");
    return {files.cert, files.key, {}, {}};
}

// client → gateway B (plain) → https → gateway A (TLS listener) → test origin: covers TLS
// termination on a listener and https origins with SNI and certificate verification.
class TlsChain : public Proxy {
  protected:
    void start_chain(const std::string& server_name) {
        auto dir = std::filesystem::temp_directory_path() /
                   ("waitroom-gw-tls-" + std::to_string(::getpid()));
        files_ = make_self_signed(dir);
        tls_front_ = std::make_unique<gateway_fixture>(origin_);
        tls_front_->start(files_);
        start([&](config::config& c) {
            c.origin.url = "https://127.0.0.1:" + std::to_string(tls_front_->port());
            c.origin.tls = true;
            c.origin.port = tls_front_->port();
            c.origin.ca_file = files_.cert;
            c.origin.server_name = server_name;
        });
    }
    void TearDown() override {
        gw_.reset();
        tls_front_.reset();
        std::filesystem::remove(files_.cert);
        std::filesystem::remove(files_.key);
    }

    config::tls_certificate files_;
    std::unique_ptr<gateway_fixture> tls_front_;
};

TEST_F(TlsChain, TerminatesTlsAndVerifiesHttpsOrigins) {
    start_chain("localhost");
    test_client c{gw_->port()};
    for (int i = 0; i < 3; ++i) {
        auto res = c.get("/hello");
        ASSERT_EQ(res.result_int(), 200u);
        EXPECT_EQ(res.body(), "hello, world\n");
    }
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-Proto"), "https");
    EXPECT_EQ(origin_.connections(), 1u);
}

TEST_F(TlsChain, ReadsAProxyHeaderArrivingWithTheClientHello) {
    files_ = make_self_signed(std::filesystem::temp_directory_path() /
                              ("waitroom-gw-pp-" + std::to_string(::getpid())));
    gw_ = std::make_unique<gateway_fixture>(origin_);
    gw_->start(files_, true);
    test_client c{gw_->port()};
    // Corked, the header and the ClientHello leave in one segment (the cork lets go after
    // 200 ms): the gateway reads past the header into the handshake's first bytes.
    int one = 1;
    ASSERT_EQ(::setsockopt(c.socket().native_handle(), IPPROTO_TCP, TCP_CORK, &one, sizeof one), 0);
    c.write_raw("PROXY TCP4 198.51.100.7 127.0.0.1 40000 443\r\n");
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_verify_mode(asio::ssl::verify_none);
    asio::ssl::stream<tcp::socket&> tls(c.socket(), ctx);
    boost::system::error_code ec;
    tls.handshake(asio::ssl::stream_base::client, ec);
    ASSERT_FALSE(ec) << ec.message();
    http::request<http::empty_body> req{http::verb::get, "/hello", 11};
    req.set(http::field::host, "localhost");
    http::write(tls, req, ec);
    ASSERT_FALSE(ec) << ec.message();
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(tls, buffer, res, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "hello, world\n");
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-For"), "198.51.100.7");
    EXPECT_EQ(origin_.last_request().header("X-Forwarded-Proto"), "https");
}

TEST_F(TlsChain, RefusesAnOriginCertificateForAnotherName) {
    start_chain("wrong.example");
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/hello").result_int(), 502u);
    EXPECT_FALSE(origin_.saw_any_request());
}

// ---- every buffer bounded, every wait timed ------------------------------------------------

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// True when `s` has bytes (or an end of stream) to read within `ms`.
bool readable_within(tcp::socket& s, int ms) {
    pollfd p{s.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

constexpr std::string_view chunked_post =
    "POST /sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";

TEST(ChunkWaitProblem, AllowsLinesAndTrailersWithinTheirBounds) {
    EXPECT_FALSE(chunk_wait_problem("1;a=" + std::string(4000, 'a'), 100));
    EXPECT_FALSE(chunk_wait_problem("\r\n0\r\nX-A: " + std::string(4000, 'a'), 8000));
    EXPECT_FALSE(chunk_wait_problem("\r\n0;e=" + std::string(4000, 'e') + "\r\nX-A: b", 100));
}

TEST(ChunkWaitProblem, RefusesAnEndlessChunkLine) {
    EXPECT_EQ(chunk_wait_problem("1;a=" + std::string(5000, 'a'), 1 << 20),
              http::error::bad_chunk_extension);
    EXPECT_EQ(chunk_wait_problem("\r\n1;a=" + std::string(5000, 'a') + "\r\n", 1 << 20),
              http::error::bad_chunk_extension);
}

TEST(ChunkWaitProblem, RefusesTrailersPastTheirLimit) {
    EXPECT_EQ(chunk_wait_problem("0\r\nX-A: " + std::string(5000, 'a'), 4096),
              http::error::header_limit);
}

TEST_F(Proxy, RefusesAnEndlessChunkExtensionWith400AndCloses) {
    start();
    test_client c{gw_->port()};
    c.write_raw(std::string(chunked_post) + "1;a=" + std::string(64 * 1024, 'a'));
    auto res = c.read();
    EXPECT_EQ(res.result_int(), 400u);
    EXPECT_NE(res.body().find("chunk line"), std::string::npos) << res.body();
    EXPECT_TRUE(c.closed_by_server());
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, ForwardsAChunkExtensionWithinItsBound) {
    start();
    test_client c{gw_->port()};
    c.write_raw(std::string(chunked_post) + "5;ext=" + std::string(3000, 'e') +
                "\r\nhello\r\n0\r\n\r\n");
    auto res = c.read();
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), "5");
}

TEST_F(Proxy, RefusesOversizedTrailersWith400) {
    start([](config::config& c) { c.limits.max_header_bytes = 1024; });
    {
        test_client c{gw_->port()};
        c.write_raw(std::string(chunked_post) + "5\r\nhello\r\n0\r\nX-T: ok\r\n\r\n");
        EXPECT_EQ(c.read().result_int(), 200u);
    }
    test_client c{gw_->port()};
    c.write_raw(std::string(chunked_post) + "5\r\nhello\r\n0\r\nX-T: " + std::string(8000, 't'));
    auto res = c.read();
    EXPECT_EQ(res.result_int(), 400u);
    EXPECT_NE(res.body().find("trailers"), std::string::npos) << res.body();
    EXPECT_TRUE(c.closed_by_server());
    EXPECT_EQ(origin_.requests(), 1u);
}

TEST_F(Proxy, ReadsASmallBodyWholeBeforeTheOriginSeesAnything) {
    start();
    test_client c{gw_->port()};
    constexpr std::size_t size = 40 * 1024;  // over a relay piece, under request_buffer
    c.write_raw("POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(size) +
                "\r\n\r\n" + std::string(size - 1, 'x'));
    // The gateway has all but one byte: the origin must not even have a connection yet. Nothing
    // marks "read and still waiting", so this gives a gateway that forwards early the time to
    // connect.
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_EQ(origin_.connections(), 0u);
    c.write_raw("x");
    auto res = c.read();
    EXPECT_EQ(res.result_int(), 200u);
    EXPECT_EQ(res.body(), std::to_string(size));
}

TEST_F(Proxy, CutsATrickledLargeBodyAndFreesItsOriginConnection) {
    start([](config::config& c) {
        c.origin.max_connections = 1;
        c.limits.request_buffer = 16 * 1024;
        c.limits.body_min_rate = 16 * 1024;  // a 16 KiB piece is due within 1 s (plus 1 s)
        c.limits.body_timeout = std::chrono::seconds(30);  // a pause alone would be let be
    });
    test_client c{gw_->port()};
    c.write_raw("POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" +
                std::string(16 * 1024, 'x'));
    // From here on, 20 bytes every 50 ms: always progress, never the rate.
    std::atomic<bool> stop{false};
    std::thread trickle([&] {
        beast::error_code ec;
        while (!stop && !ec) {
            asio::write(c.socket(), asio::buffer("0123456789abcdefghij", 20), ec);
            std::this_thread::sleep_for(milliseconds(50));  // the pace of the trickle
        }
    });
    const auto t0 = steady_clock::now();
    http::response_parser<http::string_body> p;
    beast::error_code ec;
    http::read(c.socket(), c.buffer(), p, ec);
    const auto took = steady_clock::now() - t0;
    stop = true;
    trickle.join();
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(p.get().result_int(), 408u);
    EXPECT_LT(took, std::chrono::seconds(5));
    EXPECT_EQ(origin_.requests(), 1u);  // the origin had it (streaming), then lost it
    // The one origin connection is free again for the next visitor.
    test_client next{gw_->port()};
    EXPECT_EQ(next.get("/hello").result_int(), 200u);
}

TEST_F(Proxy, EndsAWaitForAPooledConnectionWith503AndRetryAfter) {
    start([](config::config& c) {
        c.origin.max_connections = 1;
        c.origin.pool_wait_timeout = milliseconds(300);
        c.origin.max_connections_per_client = 0;  // one client address waits in the queue
    });
    test_client slow{gw_->port()};
    slow.write_raw("GET /slow?ms=3000 HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(test::poll_until(std::chrono::seconds(5), [&] { return origin_.requests() == 1; }));
    test_client c{gw_->port()};
    const auto t0 = steady_clock::now();
    auto res = c.get("/hello");
    EXPECT_EQ(res.result_int(), 503u);
    EXPECT_EQ(res[http::field::retry_after], "1");
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_EQ(slow.read().result_int(), 200u);
    EXPECT_EQ(c.get("/hello").result_int(), 200u);  // a bodiless request kept its connection
}

TEST_F(Proxy, RefusesWaitersPastTheBoundAtOnce) {
    start([](config::config& c) {
        c.origin.max_connections = 1;
        c.origin.max_pool_waiters = 1;
        c.origin.max_connections_per_client = 0;  // one client address waits in the queue
        c.origin.pool_wait_timeout = std::chrono::seconds(10);
    });
    test_client slow{gw_->port()};
    slow.write_raw("GET /slow?ms=1500 HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(test::poll_until(std::chrono::seconds(5), [&] { return origin_.requests() == 1; }));
    // Two more requests want the one connection: one may wait, the other is refused at once.
    test_client a{gw_->port()};
    test_client b{gw_->port()};
    const auto t0 = steady_clock::now();
    a.write_raw("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    b.write_raw("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    auto first = std::async(std::launch::async, [&] { return a.read().result_int(); });
    auto second = std::async(std::launch::async, [&] { return b.read().result_int(); });
    const unsigned sa = first.get();
    const unsigned sb = second.get();
    EXPECT_EQ(std::min(sa, sb), 200u);
    EXPECT_EQ(std::max(sa, sb), 503u);
    EXPECT_EQ(slow.read().result_int(), 200u);
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(Proxy, TimesAKeptAliveRequestByHeaderTimeoutOnceItsFirstByteArrives) {
    start([](config::config& c) {
        c.limits.header_timeout = milliseconds(300);
        c.limits.keepalive_timeout = std::chrono::seconds(30);
    });
    test_client c{gw_->port()};
    EXPECT_EQ(c.get("/hello").result_int(), 200u);
    c.write_raw("GET /hello HTTP/1.1\r\n");
    const auto t0 = steady_clock::now();
    EXPECT_EQ(c.read().result_int(), 408u);
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(3));
    EXPECT_TRUE(c.closed_by_server());
}

TEST_F(Proxy, LingersAfterAnErrorForOneTotalDeadline) {
    start([](config::config& c) { c.limits.max_body_bytes = 10; });
    test_client c{gw_->port()};
    c.write_raw("POST /sink HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
    EXPECT_EQ(c.read().result_int(), 413u);
    // Keep sending after the error: the gateway drops the bytes, then closes after its
    // lingering time (2 s) however often they come; writes then fail.
    const auto t0 = steady_clock::now();
    beast::error_code ec;
    while (!ec && steady_clock::now() - t0 < std::chrono::seconds(8)) {
        asio::write(c.socket(), asio::buffer(std::string(100, 'x')), ec);
        std::this_thread::sleep_for(milliseconds(50));  // the pace of the sender
    }
    EXPECT_TRUE(ec);
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(Proxy, ClosesAnIdleWebSocketTunnel) {
    start([](config::config& c) { c.limits.tunnel_idle_timeout = milliseconds(400); });
    asio::io_context io;
    beast::websocket::stream<tcp::socket> ws{io};
    ws.next_layer().connect({asio::ip::make_address("127.0.0.1"), gw_->port()});
    ws.handshake("127.0.0.1", "/ws");
    // Traffic more often than the timeout keeps it open.
    for (int i = 0; i < 6; ++i) {
        ws.write(asio::buffer(std::string("ping")));
        beast::flat_buffer buf;
        ws.read(buf);
        EXPECT_EQ(beast::buffers_to_string(buf.data()), "ping");
        std::this_thread::sleep_for(milliseconds(150));  // the pace of the traffic, under 400 ms
    }
    const auto t0 = steady_clock::now();
    ASSERT_TRUE(readable_within(ws.next_layer(), 3000)) << "the idle tunnel stayed open";
    beast::flat_buffer buf;
    beast::error_code ec;
    ws.read(buf, ec);
    EXPECT_TRUE(ec);  // closed, no message
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST_F(Proxy, CountsAWebSocketTunnelInMaxConnections) {
    start([](config::config& c) { c.limits.max_connections = 1; });
    asio::io_context io;
    beast::websocket::stream<tcp::socket> ws{io};
    ws.next_layer().connect({asio::ip::make_address("127.0.0.1"), gw_->port()});
    ws.handshake("127.0.0.1", "/ws");
    EXPECT_EQ(gw_->open_connections(), 1u);
    // The kernel takes the next connection, the gateway does not serve it while the tunnel
    // holds the one connection allowed.
    test_client c{gw_->port()};
    c.write_raw("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_FALSE(readable_within(c.socket(), 500));
    ws.close(beast::websocket::close_code::normal);
    EXPECT_EQ(c.read().result_int(), 200u);
}

}  // namespace
}  // namespace waitroom::gateway
