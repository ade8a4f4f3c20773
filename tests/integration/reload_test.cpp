// A reload is one switch: every request is served wholly under one configuration, the one its
// origin, its room and its cookie come from, never the origin of one file with the room of the
// next. Two files tell each other apart by both: file A sends to origin A and has room "a"
// (cookie _cfwaitingroom_a), file B sends to origin B and has room "b" (_cfwaitingroom_b).

#include <csignal>
#include <string>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

// One worker, so that the keep-alive connection and every reload meet on the same thread.
std::string generation_config(const test_origin& origin, const std::string& room) {
    return "listen: [\"127.0.0.1:0\"]\n"
           "origin: {url: \"" +
           origin.url() +
           "\", connect_timeout: 2s, timeout: 2s}\n"
           "admin: {listen: \"\"}\n"
           "threads: 1\n"
           "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
           "logging: {level: info}\n"
           "state: {backend: local, sync_interval: 50ms}\n"
           "rooms:\n"
           "  - {name: " +
           room + ", cookie_suffix: " + room +
           ", total_active_users: 1000, new_users_per_minute: 1000, session_duration: 5m}\n";
}

// The room whose cookie came with the response ("" when none did).
std::string cookie_room(const http_response& r) {
    const std::string_view set_cookie = r.headers[http::field::set_cookie];
    constexpr std::string_view prefix = "_cfwaitingroom_";
    if (set_cookie.substr(0, prefix.size()) != prefix) {
        return {};
    }
    const auto rest = set_cookie.substr(prefix.size());
    return std::string(rest.substr(0, rest.find('=')));
}

class Reload : public daemon_test {
  protected:
    // Rewrites the file for `room` in front of `origin`, signals, and waits for the reload's
    // last line (printed once the new configuration is in place).
    void switch_to(const test_origin& origin, const std::string& room) {
        dir_.write("config.yaml", generation_config(origin, room));
        const auto before = proc().count_output("configuration reloaded");
        proc().send_signal(SIGHUP);
        ASSERT_TRUE(poll_until(10s, [&] {
            return proc().count_output("configuration reloaded") > before;
        })) << output();
    }
};

// A keep-alive connection idle across a reload: its next request goes to the new origin with the
// new room's cookie, or to the old origin with the old room's, never one of each.
TEST_F(Reload, ARequestNeverMixesTheOriginOfOneFileWithTheRoomOfAnother) {
    test_origin second;
    start(generation_config(origin_, "a"));
    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    auto first = c.get("/hello");
    ASSERT_TRUE(from_origin(first)) << describe(first);
    ASSERT_EQ(cookie_room(first), "a");

    for (int round = 0; round < 6; ++round) {
        const bool to_b = round % 2 == 0;
        switch_to(to_b ? second : origin_, to_b ? "b" : "a");
        for (auto* conn : {&c, static_cast<client_connection*>(nullptr)}) {
            const auto a_before = origin_.requests();
            const auto b_before = second.requests();
            http_response r;
            if (conn != nullptr) {
                r = conn->get("/hello");
            } else {
                client_connection fresh(port_);
                r = fresh.get("/hello");
            }
            ASSERT_TRUE(from_origin(r)) << describe(r);
            const bool went_to_b = second.requests() == b_before + 1;
            const bool went_to_a = origin_.requests() == a_before + 1;
            ASSERT_NE(went_to_a, went_to_b) << "round " << round;
            EXPECT_EQ(cookie_room(r), went_to_b ? "b" : "a")
                << "round " << round << (conn != nullptr ? ", kept-alive" : ", new")
                << " connection: origin " << (went_to_b ? "B" : "A") << " with the cookie of "
                << r.headers[http::field::set_cookie];
            // A new connection opened after the reload sees only the new file.
            if (conn == nullptr) {
                EXPECT_EQ(went_to_b, to_b) << "round " << round;
            }
        }
    }
}

// A request decided before a reload that moves the origin, whose body arrives after it: once its
// worker has moved to the new origin (another request took the new file), it goes to neither
// origin (503, retry at once), never to the new one on the old file's decision.
TEST_F(Reload, ARequestDecidedBeforeTheOriginMovedIsNotSentToTheNewOrigin) {
    test_origin second;
    start(generation_config(origin_, "a"));
    client_connection staged(port_);
    ASSERT_TRUE(staged.connected());
    ASSERT_TRUE(staged.write_raw(
        "POST /echo HTTP/1.1\r\nHost: shop.test\r\nExpect: 100-continue\r\n"
        "Content-Length: 4\r\n\r\n"));
    // Its 100 Continue says the room (file A's) has decided on the head.
    auto go_on = staged.read_response();
    ASSERT_EQ(go_on.status, 100u) << describe(go_on);

    switch_to(second, "b");
    client_connection other(port_);
    auto moved = other.get("/hello");
    ASSERT_TRUE(from_origin(moved)) << describe(moved);
    ASSERT_EQ(second.requests(), 1u);
    ASSERT_EQ(cookie_room(moved), "b");

    ASSERT_TRUE(staged.write_raw("abcd"));
    auto r = staged.read_response();
    EXPECT_EQ(r.status, 503u) << describe(r);
    EXPECT_EQ(r.headers[http::field::retry_after], "1");
    EXPECT_EQ(second.requests(), 1u) << "sent to the new origin on the old file's decision";
    EXPECT_EQ(origin_.requests(), 0u);
}

}  // namespace
}  // namespace waitroom::test
