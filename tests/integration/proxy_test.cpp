// The proxy as a whole process: waitroomd started from a config file, in front of a real
// (in-process) origin, driven over loopback.

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

class Proxy : public daemon_test {};

TEST_F(Proxy, ReturnsTheOriginsBytesForGet) {
    start_default();
    auto r = http_get(port_, "/hello");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "hello, world\n");
    EXPECT_EQ(origin_.last_request().target, "/hello");
}

TEST_F(Proxy, ForwardsAPostBodyAndReturnsTheEcho) {
    start_default();
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    std::string body = "name=waitroom&items=3\n";
    auto r = c.post("/echo", body);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, body);
    EXPECT_EQ(origin_.last_request().method, "POST");
}

TEST_F(Proxy, RelaysAChunkedResponseThroughTheDaemon) {
    start_default();
    auto r = http_get(port_, "/chunked");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "chunk-0\nchunk-1\nchunk-2\nchunk-3\nchunk-4\n");
}

TEST_F(Proxy, ForwardsAChunkedRequestBody) {
    start_default();
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(
        c.write_raw("POST /echo HTTP/1.1\r\nHost: shop.test\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n"
                    "6\r\nhello \r\n6\r\nchunks\r\n0\r\n\r\n"));
    auto r = c.read_response();
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "hello chunks");
}

TEST_F(Proxy, ReusesOneOriginConnectionForKeepAliveRequests) {
    start_default();
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    for (int i = 0; i < 5; ++i) {
        auto r = c.get("/hello");
        ASSERT_EQ(r.error, "") << "request " << i;
        ASSERT_EQ(r.status, 200u);
    }
    EXPECT_EQ(origin_.requests(), 5u);
    EXPECT_EQ(origin_.connections(), 1u);

    // Fresh client connections reuse the pooled origin connections too: at most one per
    // worker thread (the config has two).
    for (int i = 0; i < 4; ++i) {
        auto r = http_get(port_, "/hello");
        ASSERT_EQ(r.status, 200u) << r.error;
    }
    EXPECT_LE(origin_.connections(), 2u);
}

TEST_F(Proxy, AnswersBadGatewayWhenTheOriginIsDown) {
    const closed_port dead;
    start(proxy_config("http://127.0.0.1:" + std::to_string(dead.port())));
    auto r = http_get(port_, "/hello");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 502u);
}

TEST_F(Proxy, AnswersGatewayTimeoutWhenTheOriginIsSlow) {
    start_default();  // origin.timeout: 2s
    auto r = http_get(port_, "/slow?ms=6000");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 504u);
}

// On a kept-alive connection the idle wait is bounded by keepalive_timeout (75 s), much later
// than origin.timeout (2 s): the origin's wait must still end at its own deadline.
TEST_F(Proxy, AnswersGatewayTimeoutOnAKeptAliveConnectionToo) {
    start_default();
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_EQ(c.get("/hello").status, 200u);
    std::this_thread::sleep_for(1500ms);  // past header_timeout (1 s): now the keep-alive wait
    auto r = c.get("/slow?ms=6000");  // answered 200 after 6 s unless the timeout ends it
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 504u);
}

TEST_F(Proxy, RejectsAmbiguousFramingWithoutForwardingIt) {
    start_default();
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(
        c.write_raw("POST /echo HTTP/1.1\r\nHost: shop.test\r\n"
                    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "5\r\nhello\r\n0\r\n\r\n"));
    std::string reply = c.read_until_close(10s);
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, RejectsDifferingContentLengthsWithoutForwardingThem) {
    start_default();
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(
        c.write_raw("POST /echo HTTP/1.1\r\nHost: shop.test\r\n"
                    "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"));
    std::string reply = c.read_until_close(10s);
    EXPECT_EQ(reply.rfind("HTTP/1.1 400", 0), 0u) << reply;
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, AnswersHeaderFieldsTooLargeForOversizedHeaders) {
    start_default();  // limits.max_header_bytes: 8192
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.write_raw("GET /hello HTTP/1.1\r\nHost: shop.test\r\nX-Big: " +
                            std::string(20000, 'b') + "\r\n\r\n"));
    std::string reply = c.read_until_close(10s);
    EXPECT_EQ(reply.rfind("HTTP/1.1 431", 0), 0u) << reply.substr(0, 200);
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Proxy, AnswersRequestTimeoutAndClosesWhenHeadersNeverFinish) {
    start_default();  // limits.header_timeout: 1s
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.write_raw("GET /hello HTTP/1.1\r\nHost: shop.test\r\n"));
    std::string reply = c.read_until_close(15s);
    EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
    EXPECT_FALSE(origin_.saw_any_request());
}

// 100 MiB each way must stream: the daemon's memory may grow by far less than the body.
constexpr std::uint64_t big_body = 100ull << 20;
constexpr std::uint64_t rss_growth_bound_kib = 64 * 1024;

TEST_F(Proxy, StreamsA100MiBUploadWithFlatMemory) {
    start_default();
    client_connection c(port_, 120s);
    ASSERT_TRUE(c.connected());
    ASSERT_EQ(c.get("/hello").status, 200u);  // warm up: pools, buffers
    std::uint64_t base = proc().rss_kib();
    ASSERT_GT(base, 0u);
    std::uint64_t peak = base;
    auto r = c.upload("/sink", big_body,
                      [&](std::uint64_t) { peak = std::max(peak, proc().rss_kib()); });
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, std::to_string(big_body));
    EXPECT_LT(peak - base, rss_growth_bound_kib) << "base " << base << " KiB, peak " << peak;
}

TEST_F(Proxy, StreamsA100MiBDownloadWithFlatMemory) {
    start_default();
    client_connection c(port_, 120s);
    ASSERT_TRUE(c.connected());
    ASSERT_EQ(c.get("/hello").status, 200u);
    std::uint64_t base = proc().rss_kib();
    ASSERT_GT(base, 0u);
    std::uint64_t peak = base;
    auto r = c.download("/bytes?n=" + std::to_string(big_body),
                        [&](std::uint64_t) { peak = std::max(peak, proc().rss_kib()); });
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, std::to_string(big_body));
    EXPECT_LT(peak - base, rss_growth_bound_kib) << "base " << base << " KiB, peak " << peak;
}

TEST_F(Proxy, RefusesAChunkExtensionFloodWith400AndFlatMemory) {
    start_default();
    ASSERT_EQ(http_get(port_, "/hello").status, 200u);  // warm up
    const std::uint64_t base = proc().rss_kib();
    ASSERT_GT(base, 0u);
    std::uint64_t peak = base;
    std::uint64_t sent = 0;
    const std::string head =
        "POST /sink HTTP/1.1\r\nHost: shop.test\r\nTransfer-Encoding: chunked\r\n\r\n1;a=";
    const std::string flood(256 * 1024, 'a');
    // Eight connections, each 8 MiB of an endless chunk extension (no CRLF), 64 MiB in all,
    // sent before the answer is read (the gateway drops what comes after its answer).
    for (int i = 0; i < 8; ++i) {
        client_connection c(port_, 5s);
        ASSERT_TRUE(c.connected());
        bool ok = c.write_raw(head);
        for (int piece = 0; ok && piece < 32; ++piece) {
            ok = c.write_raw(flood);
            sent += ok ? flood.size() : 0;
            peak = std::max(peak, proc().rss_kib());
        }
        auto r = c.read_response();
        EXPECT_EQ(r.status, 400u) << describe(r);
        peak = std::max(peak, proc().rss_kib());
    }
    EXPECT_EQ(origin_.requests(), 1u);  // the warm-up's only
    EXPECT_LT(peak - base, 16u * 1024) << "base " << base << " KiB, peak " << peak << " KiB, "
                                       << (sent >> 20) << " MiB sent";
}

// CPU time (utime + stime, in clock ticks) of the threads of `pid` named worker-N, by name (a
// thread a worker starts, such as Asio's resolver thread, inherits its name).
std::map<std::string, long> worker_thread_ticks(pid_t pid) {
    std::map<std::string, long> ticks;
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
        std::string name;
        std::getline(std::ifstream(task.path() / "comm"), name);
        if (name.rfind("worker-", 0) != 0) {
            continue;
        }
        std::string stat;
        std::getline(std::ifstream(task.path() / "stat"), stat);
        // Fields after the ")" that ends the name: state is the 3rd field, utime the 14th.
        std::istringstream rest(stat.substr(stat.rfind(')') + 2));
        std::vector<std::string> f{std::istream_iterator<std::string>(rest), {}};
        if (f.size() > 12) {
            ticks[name] += std::stol(f[11]) + std::stol(f[12]);
        }
    }
    return ticks;
}

// threads: 2 gives two workers, each with its own acceptor on the port (SO_REUSEPORT) and its
// own thread: connections spread over both, and both threads serve.
TEST_F(Proxy, ServesOnEveryWorkerThread) {
    start_default();
    // The threads start just after the listeners announce themselves.
    std::map<std::string, long> before;
    poll_until(5s, 10ms, [&] {
        before = worker_thread_ticks(proc().pid());
        return before.size() == 2;
    });
    ASSERT_EQ(before.size(), 2u) << "expected threads worker-0 and worker-1";
    std::vector<std::unique_ptr<client_connection>> clients;
    for (int i = 0; i < 16; ++i) {
        clients.push_back(std::make_unique<client_connection>(port_));
        ASSERT_TRUE(clients.back()->connected());
    }
    // Until each worker thread has used 30 ms of CPU (or 30 s pass).
    constexpr long min_ticks = 3;
    auto busy_enough = [&] {
        auto now = worker_thread_ticks(proc().pid());
        return std::all_of(before.begin(), before.end(), [&](const auto& b) {
            return now[b.first] - b.second >= min_ticks;
        });
    };
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!busy_enough() && std::chrono::steady_clock::now() < deadline) {
        for (auto& c : clients) {
            for (int k = 0; k < 20; ++k) {
                ASSERT_EQ(c->get("/hello").status, 200u);
            }
        }
    }
    const auto after = worker_thread_ticks(proc().pid());
    for (const auto& [name, ticks] : before) {
        EXPECT_GE(after.at(name) - ticks, min_ticks) << name << " served nothing";
    }
}

}  // namespace
}  // namespace waitroom::test
