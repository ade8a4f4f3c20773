// Proof of work on joining against the real daemon (rooms[].challenge): JSON clients get the
// puzzle in the JSON, its seed in the Waitroom-Challenge-Seed header, and answer it in
// Waitroom-Solution. A client without a solution holds no
// place however often it asks; one with a solution joins the queue and gets in first; a wrong
// solution, or one solved for another cookie, joins nothing. Solutions are found here by brute
// force with OpenSSL's SHA-256, not with the daemon's code.

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "daemon_fixture.hpp"
#include "support/proof_of_work.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

constexpr double time_scale = 5;  // a window is 2 s real, a session of 30 s is 6 s real
constexpr unsigned difficulty = 10;

unsigned zero_bits(const std::string& text) {
    return sha256_zero_bits(text);
}

std::string solve(const std::string& seed, unsigned bits) {
    return brute_force(seed, bits, "s");
}

// A candidate that does not solve `seed`.
std::string non_solution(const std::string& seed) {
    return brute_force(seed, difficulty, "n", false);
}

nlohmann::json room_json(const http_response& r) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains("cfWaitingRoom") ? j["cfWaitingRoom"] : nlohmann::json{};
}

// The seed sent beside a challenged answer.
std::string seed_of(const http_response& r) {
    return std::string{r.headers["Waitroom-Challenge-Seed"]};
}

std::string cookie_value(const cookie_jar& jar) {
    const auto& c = jar.cookie();
    return c.substr(c.find('=') + 1);
}

class Challenge : public daemon_test {
  protected:
    void SetUp() override {
        daemon_test::SetUp();
        std::ostringstream c;
        c << "listen: [\"127.0.0.1:0\"]\n"
          << "origin: {url: \"" << origin_.url() << "\", connect_timeout: 2s, timeout: 2s}\n"
          << "admin: {listen: \"127.0.0.1:0\"}\n"
          << "threads: 2\nstate: {backend: local, sync_interval: 1s}\n"
          << "testing: {time_scale: " << time_scale << "}\n"
          << "rooms:\n  - {name: Shop, total_active_users: 1, new_users_per_minute: 1000, "
          << "session_duration: 30s, refresh_interval: 10s, json_response_enabled: true, "
          << "challenge: {enabled: true, min_difficulty: " << difficulty
          << ", max_difficulty: " << difficulty << "}}\n";
        start(c.str());
        if (port_ != 0) {
            admin_port_ = announced_admin_port();
        }
    }
    std::string metrics() {
        client_connection c(admin_port_);
        return c.get("/metrics").body;
    }
    long queued_users() {
        client_connection c(admin_port_);
        auto j = nlohmann::json::parse(c.get("/rooms/shop/status").body, nullptr, false);
        return j.is_object() ? j.value("estimated_queued_users", -1L) : -1L;
    }
    bool metric_is(const std::string& name, int value) {
        return metrics().find(name + "{room=\"shop\"} " + std::to_string(value) + "\n") !=
               std::string::npos;
    }
    std::uint16_t admin_port_ = 0;
};

TEST_F(Challenge, OnlyASolvedChallengeJoinsTheQueueAndItsHolderGetsInFirst) {
    cookie_jar holder, solver, idle;
    ASSERT_TRUE(from_origin(holder.get(port_, "/hello")));

    // Cookieless requests at a full room: each gets a challenge, none a place.
    for (int i = 0; i < 20; ++i) {
        cookie_jar bot;
        auto r = bot.get(port_, "/hello", true);
        auto j = room_json(r);
        ASSERT_TRUE(j.value("challengeRequired", false)) << describe(r);
        EXPECT_EQ(j.value("challengeDifficulty", 0u), difficulty);
        const std::string value = cookie_value(bot);
        ASSERT_GE(value.size(), 22u);
        EXPECT_EQ(seed_of(r), value.substr(value.size() - 22))
            << "the seed is the end of the cookie just set";
        EXPECT_FALSE(j.contains("challengeSeed")) << "the JSON is the same for every visitor";
    }
    auto first = idle.get(port_, "/hello", true);
    ASSERT_TRUE(room_json(first).value("challengeRequired", false)) << describe(first);
    auto pending = solver.get(port_, "/hello", true);
    const std::string seed = seed_of(pending);
    ASSERT_EQ(seed.size(), 22u) << describe(pending);

    // A wrong solution joins nothing and changes nothing.
    const std::string before = solver.cookie();
    solver.solution(non_solution(seed));
    auto wrong = solver.get(port_, "/hello", true);
    EXPECT_TRUE(room_json(wrong).value("challengeRequired", false)) << describe(wrong);
    EXPECT_EQ(solver.cookie(), before);
    int failures = 1;
    // Another cookie's solution is no solution for this one.
    const std::string idle_seed = seed_of(first);
    idle.solution(solve(seed, difficulty));
    if (zero_bits(idle_seed + solve(seed, difficulty)) < difficulty) {
        ++failures;
        auto stolen = idle.get(port_, "/hello", true);
        EXPECT_TRUE(room_json(stolen).value("challengeRequired", false)) << describe(stolen);
    }
    idle.solution("");
    EXPECT_TRUE(poll_until(5s, [&] { return queued_users() == 0; }))
        << "challenged visitors are counted nowhere: " << queued_users();

    // The solution: the solver joins the queue.
    solver.solution(solve(seed, difficulty));
    auto joined = solver.get(port_, "/hello", true);
    auto jj = room_json(joined);
    EXPECT_TRUE(jj.value("inWaitingRoom", false)) << describe(joined);
    EXPECT_FALSE(jj.contains("challengeRequired")) << describe(joined);
    EXPECT_NE(solver.cookie(), before);
    solver.solution("");
    EXPECT_TRUE(poll_until(5s, [&] { return queued_users() == 1; })) << queued_users();

    // The holder leaves. The idle visitor asks as often as it likes; the place is the solver's.
    bool solver_in = false;
    ASSERT_TRUE(poll_until(45s, 50ms, [&] {
        auto i = idle.get(port_, "/hello", true);
        if (from_origin(i)) {
            ADD_FAILURE() << "the visitor without a solution got in first";
            return true;
        }
        auto s = solver.get(port_, "/hello", true);
        solver_in = from_origin(s);
        return solver_in;
    }));
    EXPECT_TRUE(solver_in);
    auto after = idle.get(port_, "/hello", true);
    EXPECT_TRUE(room_json(after).value("challengeRequired", false)) << describe(after);

    EXPECT_TRUE(metric_is("waitroom_room_challenges_solved_total", 1)) << metrics();
    EXPECT_TRUE(metric_is("waitroom_room_challenge_failures_total", failures)) << metrics();
    // 20 bots, the idle visitor and the solver; the idle visitor's challenge stayed the same.
    EXPECT_TRUE(metric_is("waitroom_room_challenges_issued_total", 22)) << metrics();
}

// The page is the same bytes for every challenged visitor (so it is compressed once): each one's
// seed comes beside it, in the cookie the page names for its script and in a header, both the
// end of that visitor's own admission cookie.
TEST_F(Challenge, EachChallengedVisitorGetsTheSamePageWithItsOwnSeedBesideIt) {
    cookie_jar holder;
    ASSERT_TRUE(from_origin(holder.get(port_, "/hello")));
    std::string previous_page;
    std::string first_seed;
    int same_pages = 0;
    for (int i = 0; i < 6; ++i) {  // on both workers, most likely
        cookie_jar bot;
        auto r = bot.get(port_, "/hello");
        ASSERT_EQ(r.status, 200u);
        const std::string value = cookie_value(bot);
        ASSERT_GE(value.size(), 22u);
        const std::string seed = value.substr(value.size() - 22);
        EXPECT_EQ(seed_of(r), seed);
        bool seed_cookie = false;
        for (auto it = r.headers.find(http::field::set_cookie);
             it != r.headers.end() && it->name() == http::field::set_cookie; ++it) {
            const std::string v{it->value()};
            if (v.rfind("waitroom_seed=", 0) == 0) {
                seed_cookie = true;
                EXPECT_EQ(v.substr(0, v.find(';')), "waitroom_seed=" + seed);
                EXPECT_EQ(v.find("HttpOnly"), std::string::npos) << "the page's script reads it";
            }
        }
        EXPECT_TRUE(seed_cookie) << describe(r);
        EXPECT_NE(r.body.find("data-challenge=\"waitroom_seed\""), std::string::npos);
        EXPECT_EQ(r.body.find(seed), std::string::npos) << "the page holds no visitor's seed";
        EXPECT_EQ(r.headers[http::field::content_length], std::to_string(r.body.size()));
        if (i > 0) {
            ASSERT_NE(seed, first_seed);
            // A sync between two answers may change the page's numbers, rarely twice here.
            same_pages += r.body == previous_page ? 1 : 0;
        } else {
            first_seed = seed;
        }
        previous_page = r.body;
    }
    EXPECT_GE(same_pages, 3) << "of 5 consecutive pairs of answers";
}

TEST_F(Challenge, HostileSolutionsAreRefusedWithoutHarm) {
    cookie_jar holder, v;
    ASSERT_TRUE(from_origin(holder.get(port_, "/hello")));
    ASSERT_TRUE(room_json(v.get(port_, "/hello", true)).value("challengeRequired", false));
    const std::string before = v.cookie();
    for (std::string bad : {std::string(5000, 'a'), std::string("a b"), std::string("%00"),
                            std::string("\xff\xfe")}) {
        v.solution(bad);
        auto r = v.get(port_, "/hello", true);
        EXPECT_TRUE(room_json(r).value("challengeRequired", false)) << describe(r);
        EXPECT_EQ(v.cookie(), before);
    }
    // Without a cookie a solution is nothing at all.
    cookie_jar fresh;
    fresh.solution("s1");
    auto r = fresh.get(port_, "/hello", true);
    EXPECT_TRUE(room_json(r).value("challengeRequired", false)) << describe(r);
    EXPECT_TRUE(proc().running());
}

}  // namespace
}  // namespace waitroom::test
