// The queue's counts against a client who tries to stretch them, on the real daemon with two
// workers: solved challenges replayed in turn, copies of queued cookies and floods of cookieless
// requests count each ticket once at most (and a ticket only once it came back with its cookie),
// so real visitors are admitted as they would be without the flood; a flagged visitor's earlier
// cookie, replayed on new connections (either worker), is refused for good.

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "daemon_fixture.hpp"
#include "support/proof_of_work.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// Product time runs 5 times faster: a 10 s window is 2 s real, a 20 s session 4 s.
constexpr double time_scale = 5;

std::string config(const std::string& origin_url, const std::string& room) {
    std::ostringstream c;
    c << "listen: [\"127.0.0.1:0\"]\n"
      << "origin: {url: \"" << origin_url << "\", connect_timeout: 2s, timeout: 2s}\n"
      << "admin: {listen: \"127.0.0.1:0\"}\n"
      << "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
      << "logging: {level: info}\n"
      << "threads: 2\nstate: {backend: local, sync_interval: 200ms}\n"
      << "testing: {time_scale: " << time_scale << "}\n"
      << "rooms:\n  - {name: Shop, " << room << "}\n";
    return c.str();
}

nlohmann::json room_json(const http_response& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("cfWaitingRoom") ? j["cfWaitingRoom"] : nlohmann::json{};
}

bool challenge_required(const http_response& r) {
    const auto j = room_json(r);
    return j.is_object() && j.value("challengeRequired", false);
}

unsigned refresh_of(const http_response& r) {
    auto it = r.headers.find("Refresh");
    return it == r.headers.end() ? 0u : static_cast<unsigned>(std::stoul(std::string{it->value()}));
}

// A real visitor's browser: it asks again when its Refresh says, as the page's script does, and
// stops once admitted. In a room with `challenge` (`bits` > 0) it solves the one it is given and
// joins with the solution at once, as the page's script does.
struct polite_visitor {
    cookie_jar jar;
    unsigned bits = 0;
    clock_type::time_point due = clock_type::now();
    clock_type::time_point arrived = clock_type::now();
    clock_type::time_point admitted{};
    bool in = false;

    // One step: asks when due. True once admitted.
    bool step(std::uint16_t port) {
        const auto now = clock_type::now();
        if (in || now < due) {
            return in;
        }
        auto r = jar.get(port, "/hello", bits > 0);
        if (bits > 0 && challenge_required(r)) {
            jar.solution(brute_force(std::string{r.headers["Waitroom-Challenge-Seed"]}, bits, "p"));
            r = jar.get(port, "/hello", true);
            jar.solution("");
        }
        if (from_origin(r)) {
            in = true;
            admitted = now;
            return true;
        }
        const auto refresh = std::chrono::duration<double>(std::max(1u, refresh_of(r)));
        due = now + std::chrono::duration_cast<clock_type::duration>(refresh / time_scale);
        return false;
    }
    // The wait from arrival to admission, in product seconds.
    double wait_seconds() const {
        return std::chrono::duration<double>(admitted - arrived).count() * time_scale;
    }
};

class QueueCounts : public daemon_test {
  protected:
    void start_room(const std::string& room) {
        start(config(origin_.url(), room));
        if (port_ != 0) {
            admin_port_ = announced_admin_port();
        }
    }
    long queued_users() {
        client_connection c(admin_port_);
        auto j = nlohmann::json::parse(c.get("/rooms/shop/status").body, nullptr, false);
        return j.is_object() ? j.value("estimated_queued_users", -1L) : -1L;
    }
    // Fills the room's `places` with visitors who then go idle (their sessions end on their own).
    void fill(int places) {
        for (int i = 0; i < places; ++i) {
            cookie_jar holder;
            ASSERT_TRUE(from_origin(holder.get(port_, "/hello")));
        }
    }
    // Runs `visitors` polite visitors, the first `lead` after the call and the others `spacing`
    // apart (real time), until every one is admitted or `deadline` passes; `flood` runs from the
    // call on, between their steps. Their waits, in product seconds (-1: not admitted).
    std::vector<double> waits(int visitors, std::chrono::milliseconds spacing,
                              std::chrono::seconds deadline, const std::function<void()>& flood,
                              std::chrono::milliseconds lead = {}) {
        std::vector<polite_visitor> v(static_cast<std::size_t>(visitors));
        const auto start = clock_type::now() + lead;
        for (std::size_t i = 0; i < v.size(); ++i) {
            v[i].bits = challenge_bits_;
            v[i].arrived = v[i].due = start + spacing * static_cast<int>(i);
        }
        poll_until(deadline + lead, 5ms, [&] {
            bool all = true;
            for (auto& x : v) {
                all = x.step(port_) && all;
            }
            if (flood) {
                flood();
            }
            return all;
        });
        std::vector<double> out;
        for (const auto& x : v) {
            out.push_back(x.in ? x.wait_seconds() : -1.0);
        }
        return out;
    }
    std::uint16_t admin_port_ = 0;
    unsigned challenge_bits_ = 0;  // the room's challenge: waits()' visitors solve it
};

std::string listed(const std::vector<double>& w) {
    std::ostringstream s;
    for (double x : w) {
        s << static_cast<long>(x) << " ";
    }
    return s.str();
}

// Solved challenges, replayed in turn on new connections (so on both workers), each join the
// queue once: however often they come back, the waiting count grows by their number at most.
TEST_F(QueueCounts, SolvedChallengesReplayedInTurnRaiseTheWaitingCountByTheirNumberAtMost) {
    constexpr unsigned bits = 8;
    constexpr int challenges = 70;
    start_room(
        "total_active_users: 1, new_users_per_minute: 1000, session_duration: 10m, "
        "refresh_interval: 60s, json_response_enabled: true, "
        "challenge: {enabled: true, min_difficulty: 8, max_difficulty: 8}");
    fill(1);
    struct solved {
        std::string cookie;
        std::string solution;
    };
    std::vector<solved> paid;
    for (int i = 0; i < challenges; ++i) {
        cookie_jar bot;
        auto r = bot.get(port_, "/hello", true);
        ASSERT_TRUE(challenge_required(r)) << describe(r);
        const std::string seed{r.headers["Waitroom-Challenge-Seed"]};
        paid.push_back({bot.cookie(), brute_force(seed, bits, "s")});
    }
    long most = 0;
    for (int round = 0; round < 4; ++round) {
        for (const auto& p : paid) {
            cookie_jar bot;
            bot.set_cookie(p.cookie);
            bot.solution(p.solution);
            auto r = bot.get(port_, "/hello", true);
            ASSERT_TRUE(room_json(r).value("inWaitingRoom", false)) << describe(r);
        }
        most = std::max(most, queued_users());
    }
    // Every report of both workers reaches the store within a few syncs.
    poll_until(3s, 100ms, [&] {
        most = std::max(most, queued_users());
        return false;
    });
    std::cout << "[ figure ] " << challenges << " solved challenges replayed 4 times: "
              << "estimated_queued_users peaked at " << most << "\n";
    EXPECT_LE(most, challenges);
    EXPECT_GE(most, challenges * 9 / 10) << "each solved challenge holds its place";
}

// Copies of one queued cookie, sent on many connections (both workers) in every window, are one
// visitor in the queue.
TEST_F(QueueCounts, CopiesOfOneQueuedCookieOnManyConnectionsCountAsOneVisitor) {
    start_room(
        "total_active_users: 1, new_users_per_minute: 1000, session_duration: 10m, "
        "refresh_interval: 60s");
    fill(1);
    cookie_jar visitor;
    ASSERT_TRUE(is_queue_page(visitor.get(port_, "/hello")));
    ASSERT_TRUE(is_queue_page(visitor.get(port_, "/hello")));  // back with its cookie
    const std::string kept = visitor.cookie();
    long most = 0;
    // Over three windows (2 s real each), copies of the cookie it was first given.
    poll_until(6s, 10ms, [&] {
        cookie_jar copy;
        copy.set_cookie(kept);
        copy.get(port_, "/hello");
        return false;
    });
    poll_until(2s, 100ms, [&] {
        most = std::max(most, queued_users());
        return false;
    });
    std::cout << "[ figure ] copies of one queued cookie over 3 windows: estimated_queued_users "
              << most << "\n";
    EXPECT_EQ(most, 1);
}

// Three places of 20 s sessions drawn at random, refreshed every 10 s.
constexpr const char* small_random_room =
    "total_active_users: 3, new_users_per_minute: 1000, session_duration: 20s, "
    "refresh_interval: 10s, queueing_method: random";

// A `random` room of 3 places under a flood of cookieless requests (about 100 a second): the
// flood holds no ticket, so it dilutes no draw, and the polite visitors are all admitted as the
// places free.
TEST_F(QueueCounts, InARandomRoomACookielessFloodLeavesNoFreePlaceIdleWhileTicketHoldersWait) {
    start_room(small_random_room);
    fill(3);
    auto flood = [&] {
        cookie_jar bot;
        bot.get(port_, "/hello");
    };
    // 6 visitors for 3 places of 20 s sessions: two rounds of sessions, each freeing within a
    // window of its end, and a refresh to come back: about 80 s of product time.
    auto w = waits(6, 0ms, 40s, flood);
    std::cout << "[ figure ] random, cookieless flood: waits (product s) " << listed(w) << "\n";
    for (double x : w) {
        EXPECT_GE(x, 0) << "a visitor with a ticket was never admitted: " << listed(w);
        EXPECT_LE(x, 120) << listed(w);
    }
}

// A `random` room whose flood comes back once with each cookie it is given (so each of its
// tickets is counted, and none draws again): free places still go to ticket holders within the
// hold, whatever the count.
TEST_F(QueueCounts, InARandomRoomTicketsThatComeBackOnceLeaveNoFreePlaceIdle) {
    start_room(small_random_room);
    fill(3);
    auto flood = [&] {
        cookie_jar bot;
        bot.get(port_, "/hello");
        bot.get(port_, "/hello");
    };
    auto w = waits(6, 0ms, 60s, flood);
    std::cout << "[ figure ] random, tickets back once: waits (product s) " << listed(w) << "\n";
    int in = 0;
    for (double x : w) {
        in += x >= 0 ? 1 : 0;
    }
    // The flood's tickets draw too, and may win places: what must hold is that places keep
    // going to someone who holds a ticket, so the polite visitors keep getting in.
    EXPECT_GE(in, 4) << listed(w);
}

// 70 challenges solved once, for a place each.
std::vector<std::pair<std::string, std::string>> solved_challenges(std::uint16_t port, int n,
                                                                   unsigned bits) {
    std::vector<std::pair<std::string, std::string>> out;
    for (int i = 0; i < n; ++i) {
        cookie_jar bot;
        auto r = bot.get(port, "/hello", true);
        out.emplace_back(bot.cookie(),
                         brute_force(std::string{r.headers["Waitroom-Challenge-Seed"]}, bits, "s"));
    }
    return out;
}

// In a `fifo` room with `challenge`, 70 solved challenges replayed in turn (about 100 requests a
// second, from one arrival window before the real visitors on) and a cookieless flood delay no
// real visitor by more than one refresh: the k-th real visitor admitted waits at most one
// refresh more than the k-th without the flood (visitors of one arrival window may pass each
// other: they are one bucket).
TEST_F(QueueCounts, InAFifoRoomReplayedChallengesDelayNoRealVisitorByMoreThanARefresh) {
    constexpr unsigned bits = 8;
    const std::string room =
        "total_active_users: 3, new_users_per_minute: 1000, session_duration: 20s, "
        "refresh_interval: 10s, json_response_enabled: true, "
        "challenge: {enabled: true, min_difficulty: 8, max_difficulty: 8}";
    challenge_bits_ = bits;
    start_room(room);
    fill(3);
    auto calm = waits(6, 400ms, 60s, {}, 2s);
    daemon_.reset();
    start_room(room);
    fill(3);
    const auto paid = solved_challenges(port_, 70, bits);
    std::size_t next = 0;
    auto flood = [&] {
        cookie_jar bot;
        if (next % 4 != 3) {  // three replays for each cookieless request
            bot.set_cookie(paid[next % paid.size()].first);
            bot.solution(paid[next % paid.size()].second);
        }
        ++next;
        bot.get(port_, "/hello", true);
    };
    auto flooded = waits(6, 400ms, 60s, flood, 2s);
    std::cout << "[ figure ] fifo, 70 challenges replayed: waits without flood " << listed(calm)
              << "; with flood " << listed(flooded) << "(product s)\n";
    ASSERT_EQ(calm.size(), flooded.size());
    for (double x : calm) {
        ASSERT_GE(x, 0) << listed(calm);
    }
    for (double x : flooded) {
        EXPECT_GE(x, 0) << listed(flooded);
    }
    std::sort(calm.begin(), calm.end());
    std::sort(flooded.begin(), flooded.end());
    for (std::size_t i = 0; i < calm.size(); ++i) {
        // One refresh (10 s), and the Refresh of a visitor near the front (2 s).
        EXPECT_LE(flooded[i], calm[i] + 12) << i << ": " << listed(calm) << "/ " << listed(flooded);
    }
}

// abuse_action: infinite_queue. A visitor flagged on one connection keeps its earlier cookie
// back and replays it on new connections (both workers, most of them not the one that flagged
// it): the earlier ticket is refused everywhere, and neither cookie is ever admitted, while the
// place frees for a polite visitor.
TEST_F(QueueCounts, AFlaggedVisitorsEarlierCookieReplayedOnEveryWorkerIsNeverAdmitted) {
    start_room(
        "total_active_users: 1, new_users_per_minute: 1000, session_duration: 10s, "
        "refresh_interval: 20s, abuse_action: infinite_queue");
    fill(1);
    cookie_jar bot;
    ASSERT_TRUE(is_queue_page(bot.get(port_, "/hello")));
    ASSERT_TRUE(is_queue_page(bot.get(port_, "/hello")));
    const std::string pre_flag = bot.cookie();
    // The bot floods on one keep-alive connection, so that one worker flags it.
    {
        client_connection c(port_);
        for (int i = 0; i < 200; ++i) {
            http::request<http::string_body> req{http::verb::get, "/hello", 11};
            req.set(http::field::host, "localhost");
            req.set(http::field::cookie, bot.cookie());
            auto r = c.request(std::move(req));
            auto sc = r.headers.find(http::field::set_cookie);
            if (sc != r.headers.end()) {
                std::string v{sc->value()};
                bot.set_cookie(v.substr(0, v.find(';')));
            }
        }
    }
    ASSERT_TRUE(proc().wait_for_output("flagged for refreshing far faster", 5s)) << output();
    polite_visitor polite;
    int replays = 0;
    bool done = poll_until(60s, 10ms, [&] {
        cookie_jar copy;
        copy.set_cookie(pre_flag);
        auto r = copy.get(port_, "/hello");
        ++replays;
        if (from_origin(r)) {
            ADD_FAILURE() << "the cookie kept from before the flag was admitted after " << replays
                          << " replays";
            return true;
        }
        auto b = bot.get(port_, "/hello");
        if (from_origin(b)) {
            ADD_FAILURE() << "the flagged cookie was admitted";
            return true;
        }
        return polite.step(port_);
    });
    EXPECT_TRUE(done && polite.in) << "the polite visitor was never admitted";
    // Past the polite visitor's admission, the earlier cookie still gets nowhere on either worker.
    for (int i = 0; i < 40; ++i) {
        cookie_jar copy;
        copy.set_cookie(pre_flag);
        auto r = copy.get(port_, "/hello");
        EXPECT_FALSE(from_origin(r)) << "replay " << i;
    }
}

}  // namespace
}  // namespace waitroom::test
