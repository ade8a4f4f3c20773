// Faults around a running waitroomd, with the real daemon and the test origin: the origin
// killed and restarted, a reload every 100 ms under load, SIGTERM under load. Load loops are
// bounded by a deadline; every wait for an outcome polls with a deadline.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"
#include "http_client.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

// A daemon with one room on /hello of shop.test (two places, sessions of five minutes) in
// front of the origin at `origin_url`; every other path passes the gateway as a plain proxy.
std::string room_config(const std::string& origin_url) {
    return proxy_config(origin_url,
                        "rooms:\n  - {name: Shop, host: shop.test, path: /hello, "
                        "total_active_users: 2, new_users_per_minute: 100, "
                        "session_duration: 5m}\n");
}

http_response get_shop(client_connection& c, std::string_view target) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "shop.test");
    return c.request(std::move(req));
}

// A few client threads keep requests going until stopped, on keep-alive connections (opened
// again when the server closes one between requests) and on fresh ones; every response must be
// the origin's. A request whose connection the server closed before reading it (no byte of a
// response) is counted apart: the client may retry it, as browsers do.
class load {
  public:
    load(std::uint16_t port, int threads) {
        for (int i = 0; i < threads; ++i) {
            threads_.emplace_back([this, port, i] { run(port, i % 2 == 0); });
        }
    }
    ~load() { stop(); }

    void stop() {
        stop_ = true;
        for (auto& t : threads_) {
            if (t.joinable()) {
                t.join();
            }
        }
    }

    std::size_t ok() const { return ok_; }
    std::size_t failed() const { return failed_; }
    std::string failures() const {
        std::lock_guard lock(mu_);
        return failures_;
    }

  private:
    void run(std::uint16_t port, bool keep_alive) {
        std::unique_ptr<client_connection> c;
        while (!stop_) {
            if (!c || !keep_alive) {
                c = std::make_unique<client_connection>(port, 10s);
            }
            auto r = get_shop(*c, "/bytes?n=2000");
            if (r.status == 200 && r.body.size() == 2000) {
                ++ok_;
                continue;
            }
            ++failed_;
            std::lock_guard lock(mu_);
            if (failures_.size() < 2000) {
                failures_ += describe(r) + "\n";
            }
            c.reset();
        }
    }

    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> ok_{0};
    std::atomic<std::size_t> failed_{0};
    mutable std::mutex mu_;
    std::string failures_;
    std::vector<std::thread> threads_;
};

class Faults : public daemon_test {};

TEST_F(Faults, OriginKilledAndRestartedGets502MeanwhileThenRecoversWithTheSameAdmittedVisitors) {
    // An origin of its own, to stop and start again on the same port.
    auto origin = std::make_unique<test_origin>();
    ASSERT_NO_FATAL_FAILURE(start(room_config(origin->url())));
    const std::uint16_t origin_port = origin->port();
    cookie_jar a;
    cookie_jar b;
    cookie_jar c;
    ASSERT_TRUE(from_origin(a.get(port_, "/hello")));
    ASSERT_TRUE(from_origin(b.get(port_, "/hello")));
    ASSERT_TRUE(is_queue_page(c.get(port_, "/hello")));
    // Pooled origin connections, then the origin goes with them.
    auto kept = std::make_unique<client_connection>(port_);
    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(get_shop(*kept, "/bytes?n=100").status, 200u);
    }
    origin.reset();

    // Meanwhile: 502 for whatever goes to the origin (on pooled and fresh connections alike),
    // the queue page for the queued, and the daemon keeps running.
    for (int i = 0; i < 10; ++i) {
        auto ra = a.get(port_, "/hello");
        EXPECT_EQ(ra.status, 502u) << describe(ra);
        auto rk = get_shop(*kept, "/bytes?n=100");
        EXPECT_EQ(rk.status, 502u) << describe(rk);
        if (rk.status == 0) {
            kept = std::make_unique<client_connection>(port_);
        }
        EXPECT_TRUE(is_queue_page(c.get(port_, "/hello")));
    }
    ASSERT_TRUE(proc().running()) << output();

    origin = std::make_unique<test_origin>(origin_port);
    // The pool gets going again: the same keep-alive client, the admitted pair, and still
    // nobody else: the queued visitor and a new one stay in line.
    EXPECT_TRUE(poll_until(10s, [&] { return get_shop(*kept, "/bytes?n=100").status == 200; }))
        << output();
    for (int i = 0; i < 5; ++i) {
        auto ra = a.get(port_, "/hello");
        EXPECT_TRUE(from_origin(ra)) << describe(ra);
        auto rb = b.get(port_, "/hello");
        EXPECT_TRUE(from_origin(rb)) << describe(rb);
        auto rk = get_shop(*kept, "/bytes?n=100");
        EXPECT_EQ(rk.status, 200u) << describe(rk);
    }
    EXPECT_TRUE(is_queue_page(c.get(port_, "/hello")));
    cookie_jar d;
    EXPECT_TRUE(is_queue_page(d.get(port_, "/hello")));
    EXPECT_TRUE(proc().running()) << output();
}

TEST_F(Faults, ReloadEveryHundredMillisecondsUnderLoadFailsNoRequest) {
    ASSERT_NO_FATAL_FAILURE(start(room_config(origin_.url())));
    load traffic(port_, 4);
    ASSERT_TRUE(poll_until(10s, [&] { return traffic.ok() > 20; })) << traffic.failures();
    // Thirty reloads, one every 100 ms; each is seen applied before the next (signals of one
    // kind do not queue, so two close together could count as one).
    for (std::size_t n = 1; n <= 30; ++n) {
        proc().send_signal(SIGHUP);
        ASSERT_TRUE(poll_until(10s, 5ms,
                               [&] { return proc().count_output("configuration reloaded") >= n; }))
            << "reload " << n << " not applied:\n"
            << output().substr(0, 4000);
        std::this_thread::sleep_for(100ms);  // the pace of the reloads, not a wait for an outcome
    }
    traffic.stop();
    EXPECT_EQ(traffic.failed(), 0u) << traffic.failures();
    EXPECT_GT(traffic.ok(), 100u);
    EXPECT_TRUE(proc().running());
}

TEST_F(Faults, TerminateUnderLoadCompletesEveryInFlightRequestWithinTheDrainTimeout) {
    // Eight slow requests (1.5 s) that the origin is working on when SIGTERM comes, with fast
    // traffic around them; origin.timeout 10 s, so that a loaded machine makes none a 504.
    ASSERT_NO_FATAL_FAILURE(start(with_origin_timeout(room_config(origin_.url()), "10s")));
    constexpr int slow = 8;
    std::vector<std::unique_ptr<client_connection>> conns;
    for (int i = 0; i < slow; ++i) {
        conns.push_back(std::make_unique<client_connection>(port_));
        ASSERT_TRUE(
            conns.back()->write_raw("GET /slow?ms=1500 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    }
    std::atomic<bool> stop{false};
    std::atomic<std::size_t> fast_ok{0};
    std::atomic<std::size_t> fast_torn{0};  // a response cut short: never acceptable
    std::vector<std::thread> fast;
    for (int i = 0; i < 3; ++i) {
        fast.emplace_back([&] {
            while (!stop) {
                client_connection c(port_, 5s);
                if (!c.connected()) {
                    continue;  // the listener closed: the drain has begun
                }
                auto r = get_shop(c, "/bytes?n=50000");
                if (r.status == 200 && r.body.size() == 50000) {
                    ++fast_ok;
                } else if (r.status != 0) {
                    ++fast_torn;
                }
            }
        });
    }
    ASSERT_TRUE(poll_until(10s, [&] {
        return origin_.requests() >= static_cast<std::size_t>(slow) && fast_ok > 20;
    })) << output();

    const auto sent = std::chrono::steady_clock::now();
    proc().send_signal(SIGTERM);
    for (int i = 0; i < slow; ++i) {
        auto r = conns[i]->read_response();
        EXPECT_EQ(r.error, "") << "slow request " << i;
        EXPECT_EQ(r.status, 200u) << "slow request " << i << ": " << describe(r);
        EXPECT_EQ(r.body, "slow\n");
    }
    auto code = proc().wait_exit(15s);
    const auto took = std::chrono::steady_clock::now() - sent;
    stop = true;
    for (auto& t : fast) {
        t.join();
    }
    ASSERT_TRUE(code.has_value()) << "still running after SIGTERM:\n" << output();
    EXPECT_EQ(*code, 0) << output();
    EXPECT_LT(took, 10s) << "exited after the drain timeout";
    EXPECT_EQ(fast_torn, 0u) << "a response was cut short by the drain";
    EXPECT_GT(fast_ok, 20u);
}

}  // namespace
}  // namespace waitroom::test
