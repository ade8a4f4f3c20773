// Bots against the real daemon: a client that refreshes far faster than its Refresh is flagged
// and, with abuse_action: infinite_queue, never admitted while a polite visitor behind it is;
// with cookie.bind: prefix, a cookie copied to another network is a new visitor's. Client
// addresses are presented through a trusted proxy's X-Forwarded-For and from other loopback
// source addresses.

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view cookie_name = cookie_jar::name;

// One visitor's browser on its own port: the cookie jar, presenting itself through a trusted
// proxy's X-Forwarded-For or from another loopback source address.
class browser : public cookie_jar {
  public:
    explicit browser(std::uint16_t port) : port_(port) {}
    http_response get(std::string_view target = "/hello") { return cookie_jar::get(port_, target); }

  private:
    std::uint16_t port_;
};

bool sets_room_cookie(const http_response& r) {
    auto it = r.headers.find(http::field::set_cookie);
    return it != r.headers.end() &&
           std::string_view{it->value()}.rfind(std::string(cookie_name) + "=", 0) == 0;
}

unsigned refresh_of(const http_response& r) {
    auto it = r.headers.find("Refresh");
    return it == r.headers.end() ? 0u : static_cast<unsigned>(std::stoul(std::string{it->value()}));
}

// Product time runs this many times faster (a Refresh of 2 s is 0.4 s real, a window 2 s).
constexpr double time_scale = 5;

std::string config(const std::string& origin_url, const std::string& top, const std::string& room,
                   bool scaled) {
    std::ostringstream c;
    c << "listen: [\"127.0.0.1:0\"]\n"
      << "origin: {url: \"" << origin_url << "\", connect_timeout: 2s, timeout: 2s}\n"
      << "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
      << "logging: {level: info}\n"
      << top;
    if (scaled) {
        c << "threads: 1\nstate: {backend: local, sync_interval: 1s}\n"
          << "testing: {time_scale: " << time_scale << "}\n";
    } else {
        c << "threads: 2\nstate: {backend: local, sync_interval: 50ms}\n";
    }
    c << "rooms:\n  - {name: Shop, " << room << "}\n";
    return c.str();
}

class Abuse : public daemon_test {
  protected:
    void start_with_admin(const std::string& yaml) {
        start(yaml);
        if (port_ != 0) {
            admin_port_ = announced_admin_port();
        }
    }
    std::string metrics() {
        client_connection c(admin_port_);
        return c.get("/metrics").body;
    }
    std::uint16_t admin_port_ = 0;
};

TEST_F(Abuse, AFloodingClientIsHeldInTheInfiniteQueueWhileAPoliteVisitorBehindItGetsIn) {
    start_with_admin(config(origin_.url(), "admin: {listen: \"127.0.0.1:0\"}\n",
                            "total_active_users: 1, new_users_per_minute: 1000, "
                            "session_duration: 10s, refresh_interval: 20s, "
                            "abuse_action: infinite_queue",
                            true));
    browser holder{port_}, bot{port_}, polite{port_};
    ASSERT_TRUE(from_origin(holder.get()));
    auto first = bot.get();
    ASSERT_TRUE(is_queue_page(first)) << describe(first);
    auto p = polite.get();
    ASSERT_TRUE(is_queue_page(p)) << describe(p);

    // The bot refreshes as fast as it can: hundreds of requests in a few product seconds, where
    // its Refresh asks for one every few. The holder browses meanwhile, so that a loaded
    // machine slowing the flood down does not end its session (and free its place) first.
    for (int i = 0; i < 200; ++i) {
        auto r = bot.get();
        ASSERT_TRUE(is_queue_page(r)) << i << ": " << describe(r);
        if (i % 10 == 9) {
            ASSERT_TRUE(from_origin(holder.get())) << "the holder lost its place at " << i;
        }
    }
    ASSERT_TRUE(proc().wait_for_output("flagged for refreshing far faster", 5s)) << output();
    EXPECT_NE(metrics().find("waitroom_room_flagged_total{room=\"shop\"} 1\n"), std::string::npos)
        << metrics();

    // The holder goes idle and its session ends. The bot keeps hammering; the polite visitor
    // comes back when its Refresh says.
    auto polite_due = std::chrono::steady_clock::now();
    bool polite_in = false;
    bool done = poll_until(60s, 20ms, [&] {
        auto b = bot.get();
        if (!is_queue_page(b)) {
            ADD_FAILURE() << "the flagged bot got: " << describe(b);
            return true;
        }
        if (std::chrono::steady_clock::now() >= polite_due) {
            auto r = polite.get();
            if (from_origin(r)) {
                polite_in = true;
                return true;
            }
            EXPECT_TRUE(is_queue_page(r)) << describe(r);
            polite_due =
                std::chrono::steady_clock::now() +
                std::chrono::milliseconds{static_cast<long>(refresh_of(r) * 1000 / time_scale)};
        }
        return false;
    });
    ASSERT_TRUE(done);
    EXPECT_TRUE(polite_in) << "the polite visitor behind the flagged bot never got in";
    const std::size_t origin_seen = origin_.requests();

    // The polite visitor leaves; the room empties; the bot still never gets in.
    const auto until = std::chrono::steady_clock::now() + 6s;
    while (std::chrono::steady_clock::now() < until) {
        auto b = bot.get();
        ASSERT_TRUE(is_queue_page(b)) << "the flagged bot got: " << describe(b);
        std::this_thread::sleep_for(50ms);  // a steady flood, not a busy loop
    }
    EXPECT_EQ(origin_.requests(), origin_seen) << "a flagged request reached the origin";
    EXPECT_NE(metrics().find("waitroom_room_flagged_total{room=\"shop\"} 1\n"), std::string::npos)
        << "flagged once, however long the flood";
}

TEST_F(Abuse, WithoutAbuseActionAFloodIsNeitherFlaggedNorCounted) {
    start_with_admin(config(origin_.url(), "admin: {listen: \"127.0.0.1:0\"}\n",
                            "total_active_users: 1, new_users_per_minute: 1000", false));
    browser holder{port_}, bot{port_};
    ASSERT_TRUE(from_origin(holder.get()));
    ASSERT_TRUE(is_queue_page(bot.get()));
    int cookies_set = 0;
    for (int i = 0; i < 200; ++i) {
        auto r = bot.get();
        ASSERT_TRUE(is_queue_page(r)) << describe(r);
        cookies_set += sets_room_cookie(r) ? 1 : 0;
    }
    EXPECT_LT(cookies_set, 10) << "early refreshes set no cookie";
    EXPECT_NE(metrics().find("waitroom_room_flagged_total{room=\"shop\"} 0\n"), std::string::npos)
        << metrics();
    EXPECT_EQ(output().find("flagged"), std::string::npos) << output();
}

// A trusted proxy (the test itself, on 127.0.0.1) names each request's client.
const std::string bind_top =
    "admin: {listen: \"127.0.0.1:0\"}\n"
    "cookie: {bind: prefix}\n"
    "trusted_proxies: [\"127.0.0.1/32\"]\n";

TEST_F(Abuse, ABoundCookieUsedFromAnotherNetworkIsANewVisitor) {
    start_with_admin(config(origin_.url(), bind_top,
                            "total_active_users: 1, new_users_per_minute: 1000", false));
    browser holder{port_};
    holder.forwarded_for("198.51.100.7");
    ASSERT_TRUE(from_origin(holder.get()));
    const std::string sealed = holder.cookie();
    ASSERT_FALSE(sealed.empty());

    // The same /24: the same visitor (a new address from the provider's pool).
    holder.forwarded_for("198.51.100.201");
    EXPECT_TRUE(from_origin(holder.get()));

    // A copy from another /24 is a new visitor: queued behind the holder, with a cookie of its
    // own; the holder keeps its session.
    browser copy{port_};
    copy.set_cookie(sealed);
    copy.forwarded_for("198.51.101.7");
    auto r = copy.get();
    EXPECT_TRUE(is_queue_page(r)) << describe(r);
    EXPECT_TRUE(sets_room_cookie(r));
    EXPECT_NE(copy.cookie(), sealed);
    holder.forwarded_for("198.51.100.7");
    EXPECT_TRUE(from_origin(holder.get()));
    EXPECT_NE(metrics().find("waitroom_room_cookie_network_changed_total{room=\"shop\"} 1\n"),
              std::string::npos)
        << metrics();
}

// One keep-alive connection (a proxy's to the gateway) carrying the same cookie for clients of
// two networks: the connection remembers the cookie it opened, and that memory must not let the
// copy from the other network through.
TEST_F(Abuse, ABoundCookieOnOneKeepAliveConnectionIsCheckedForEveryRequestsNetwork) {
    start_with_admin(config(origin_.url(), bind_top,
                            "total_active_users: 1, new_users_per_minute: 1000", false));
    browser holder{port_};
    holder.forwarded_for("198.51.100.7");
    ASSERT_TRUE(from_origin(holder.get()));
    const std::string sealed = holder.cookie();
    ASSERT_FALSE(sealed.empty());

    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    auto ask = [&](const std::string& from) {
        http::request<http::string_body> req{http::verb::get, "/hello", 11};
        req.set(http::field::host, "shop.test");
        req.set(http::field::cookie, sealed);
        req.set("X-Forwarded-For", from);
        return c.request(std::move(req));
    };
    EXPECT_TRUE(from_origin(ask("198.51.100.9")));   // the holder's /24
    EXPECT_TRUE(from_origin(ask("198.51.100.10")));  // again, from memory
    auto r = ask("198.51.101.9");                   // another /24, same connection
    EXPECT_TRUE(is_queue_page(r)) << describe(r);
    EXPECT_TRUE(from_origin(ask("198.51.100.9")));   // and back
}

TEST_F(Abuse, ABoundCookieFollowsAnIpv6VisitorInsideItsSlashFiftySix) {
    start_with_admin(config(origin_.url(), bind_top,
                            "total_active_users: 1, new_users_per_minute: 1000", false));
    browser holder{port_};
    holder.forwarded_for("2001:db8:1:200::1");
    ASSERT_TRUE(from_origin(holder.get()));
    const std::string sealed = holder.cookie();
    holder.forwarded_for("2001:db8:1:2ff:aaaa::9");  // another /64 of the same /56
    EXPECT_TRUE(from_origin(holder.get()));
    browser copy{port_};
    copy.set_cookie(sealed);
    copy.forwarded_for("2001:db8:1:300::1");  // the next /56
    EXPECT_TRUE(is_queue_page(copy.get()));
}

TEST_F(Abuse, ABoundCookieFromAnotherSourceAddressIsANewVisitor) {
    // No proxy at all: the socket's peer address is the client's.
    start_with_admin(config(origin_.url(),
                            "admin: {listen: \"127.0.0.1:0\"}\ncookie: {bind: prefix}\n",
                            "total_active_users: 1, new_users_per_minute: 1000", false));
    browser holder{port_};
    holder.source("127.0.0.2");
    ASSERT_TRUE(from_origin(holder.get()));
    holder.source("127.0.0.3");
    EXPECT_TRUE(from_origin(holder.get())) << "the same /24";
    browser copy{port_};
    copy.set_cookie(holder.cookie());
    copy.source("127.0.1.2");
    EXPECT_TRUE(is_queue_page(copy.get()));
}

TEST_F(Abuse, ACookieSealedBeforeBindWasTurnedOnIsAcceptedOnceAndBoundByTheAnswer) {
    // First without binding; then the same key file (beside the config) under bind: prefix.
    start(config(origin_.url(), "admin: {listen: \"\"}\ntrusted_proxies: [\"127.0.0.1/32\"]\n",
                 "total_active_users: 1, new_users_per_minute: 1000", false));
    browser holder{port_};
    holder.forwarded_for("198.51.100.7");
    ASSERT_TRUE(from_origin(holder.get()));
    const std::string unbound = holder.cookie();
    daemon_.reset();
    start_with_admin(config(origin_.url(), bind_top,
                            "total_active_users: 1, new_users_per_minute: 1000", false));

    // The unbound cookie keeps its session, and the answer binds it to this network.
    browser after_restart{port_};  // the daemon listens on a new port
    after_restart.set_cookie(unbound);
    after_restart.forwarded_for("203.0.113.9");
    auto r = after_restart.get();
    EXPECT_TRUE(from_origin(r)) << describe(r);
    EXPECT_TRUE(sets_room_cookie(r));
    EXPECT_NE(after_restart.cookie(), unbound);
    EXPECT_TRUE(from_origin(after_restart.get()));
    // Bound now: the same cookie from the network it was first seen on is someone else's (the
    // restarted node counts no one inside yet, so the newcomer may be let in: as a new visitor,
    // with a session of its own).
    browser copy{port_};
    copy.set_cookie(after_restart.cookie());
    copy.forwarded_for("198.51.100.7");
    auto c = copy.get();
    EXPECT_TRUE(sets_room_cookie(c)) << describe(c);
    EXPECT_NE(copy.cookie(), after_restart.cookie());
    EXPECT_NE(metrics().find("waitroom_room_cookie_network_changed_total{room=\"shop\"} 1\n"),
              std::string::npos)
        << metrics();
}

}  // namespace
}  // namespace waitroom::test
