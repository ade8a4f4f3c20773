// The waiting room as a whole process: waitroomd with a room in its config file, in front of a
// real (in-process) origin, driven by visitors that each keep their own cookie jar. Time-bound
// behaviour (sessions ending, arrival buckets) runs under `testing.time_scale`, so minutes pass
// in seconds; every wait polls for an outcome with a generous deadline, nothing asserts timing.

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view cookie_name = "_cfwaitingroom";

// Product time runs this many times faster in the tests that wait for windows and sessions:
// a 10 s window (arrival bucket) takes 2 s, a 5 s session ends 1–3 s after its last request.
constexpr double time_scale = 5;
// Holding on for window_steps × 200 ms (more than a window of real time) puts the next arrival
// in a later arrival bucket.
constexpr int window_steps = 12;

// A daemon config with one room. `room` is the room's flow-mapping body (after `name: Shop,`).
// Under a time scale the daemon runs one worker and syncs every 200 ms: a second of product
// time, as in production. (Every second of wall time was five of product time, as long as a
// session here: a sync could then miss a visitor's check-ins for longer than its place lives
// in the store, and lease that place to the next visitor.) The sync task's lease times are
// scaled with the clock; NeverAdmitsOverTheLimitAcrossWorkersUnderTimeScale guards that with
// two workers.
std::string room_config(const std::string& origin_url, const std::string& room,
                        double scale = 1.0) {
    std::ostringstream c;
    c << "listen: [\"127.0.0.1:0\"]\n"
      << "origin: {url: \"" << origin_url << "\", connect_timeout: 2s, timeout: 2s}\n"
      << "admin: {listen: \"\"}\n"
      << "limits: {header_timeout: 1s, max_header_bytes: 8192, drain_timeout: 10s}\n"
      << "logging: {level: info}\n";
    if (scale != 1.0) {
        c << "threads: 1\nstate: {backend: local, sync_interval: 200ms}\n"
          << "testing: {time_scale: " << scale << "}\n";
    } else {
        c << "threads: 2\nstate: {backend: local, sync_interval: 50ms}\n";
    }
    c << "rooms:\n  - {name: Shop, " << room << "}\n";
    return c.str();
}

// One visitor with its own cookie jar (the room cookie only), a fresh connection per request.
class visitor {
  public:
    explicit visitor(std::uint16_t port) : port_(port) {}

    http_response get(std::string_view target, bool json = false) {
        return jar_.get(port_, target, json);
    }

    const std::string& cookie() const { return jar_.cookie(); }  // "name=value", "" before any
    void set_cookie(std::string c) { jar_.set_cookie(std::move(c)); }

  private:
    std::uint16_t port_;
    cookie_jar jar_;
};

std::size_t set_cookie_count(const http_response& r) {
    return r.headers.count(http::field::set_cookie);
}

std::string header(const http_response& r, std::string_view name) {
    auto it = r.headers.find(name);
    return it == r.headers.end() ? std::string{} : std::string{it->value()};
}

// A visitor's cookie with one character of the sealed value changed (authentication fails).
std::string tampered(const std::string& cookie) {
    std::string out = cookie;
    std::size_t i = cookie_name.size() + 1 + (cookie.size() - cookie_name.size() - 1) / 2;
    out[i] = out[i] == 'A' ? 'B' : 'A';
    return out;
}

class Room : public daemon_test {};

TEST_F(Room, AdmitsThreeVisitorsAndQueuesTheFourthWithoutTouchingTheOrigin) {
    start(room_config(origin_.url(),
                      "total_active_users: 3, new_users_per_minute: 100, session_duration: 5m, "
                      "queueing_status_code: 202, refresh_interval: 20s"));
    std::vector<visitor> v(4, visitor{port_});
    for (int i = 0; i < 3; ++i) {
        auto r = v[i].get("/hello");
        ASSERT_EQ(r.error, "");
        EXPECT_TRUE(from_origin(r)) << "visitor " << i + 1 << ": " << r.status << " " << r.body;
        EXPECT_NE(v[i].cookie(), "") << "visitor " << i + 1 << " got no room cookie";
    }
    ASSERT_EQ(origin_.requests(), 3u);

    auto q = v[3].get("/hello");
    ASSERT_EQ(q.error, "");
    EXPECT_TRUE(is_queue_page(q, 202)) << q.status << "\n" << q.body.substr(0, 300);
    EXPECT_EQ(header(q, "Cache-Control"), "no-store");
    std::string refresh = header(q, "Refresh");
    EXPECT_FALSE(refresh.empty());
    EXPECT_EQ(refresh.find_first_not_of("0123456789"), std::string::npos) << refresh;
    EXPECT_EQ(header(q, "Set-Cookie").rfind("_cfwaitingroom=", 0), 0u) << header(q, "Set-Cookie");
    EXPECT_EQ(origin_.requests(), 3u) << "the origin saw a queued request";

    // Admitted visitors keep passing with their cookie; the queued one stays queued.
    for (int i = 0; i < 3; ++i) {
        auto r = v[i].get("/hello");
        EXPECT_TRUE(from_origin(r)) << "admitted visitor " << i + 1 << ": " << r.status;
    }
    EXPECT_EQ(origin_.requests(), 6u);
    EXPECT_TRUE(is_queue_page(v[3].get("/hello"), 202));
    EXPECT_EQ(origin_.requests(), 6u);
}

// The queue page's script checks in with `Waitroom-Check-In: 1`: a visitor the room knows is
// answered by the gateway itself when it is admitted (204 and the cookie, the origin not asked),
// so its session goes on without a request to the origin; a queued one gets the queue page. A
// check-in without a cookie is an ordinary request (no session is handed out unseen by the
// origin). (A queued visitor let in by a check-in: queue_page.test.mjs, in a real browser.)
TEST_F(Room, AScriptCheckInOfAKnownVisitorIsAnsweredByTheGatewayAndNeverReachesTheOrigin) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 100, session_duration: 5m, "
                      "refresh_interval: 20s"));
    cookie_jar first;
    first.check_in(true);
    EXPECT_TRUE(from_origin(first.get(port_, "/hello?x=1")));  // no cookie: as any request
    EXPECT_EQ(origin_.requests(), 1u);
    ASSERT_NE(first.cookie(), "");

    auto in = first.get(port_, "/hello?x=1");
    ASSERT_EQ(in.error, "");
    EXPECT_EQ(in.status, 204u) << in.body;
    EXPECT_EQ(in.body, "");
    EXPECT_EQ(header(in, "Cache-Control"), "no-store");
    EXPECT_EQ(origin_.requests(), 1u) << "the check-in reached the origin";
    first.check_in(false);
    EXPECT_TRUE(from_origin(first.get(port_, "/hello?x=1")));  // the page load that follows
    EXPECT_EQ(origin_.requests(), 2u);

    cookie_jar second;  // the room is full: a check-in is queued like a reload
    EXPECT_TRUE(is_queue_page(second.get(port_, "/hello?x=1")));
    second.check_in(true);
    auto q = second.get(port_, "/hello?x=1");
    EXPECT_TRUE(is_queue_page(q)) << q.status << "\n" << q.body.substr(0, 200);
    EXPECT_FALSE(header(q, "Refresh").empty());
    EXPECT_EQ(origin_.requests(), 2u);
}

// A sibling subdomain can plant `_cfwaitingroom` for the parent domain; the browser then sends
// it beside the visitor's own, often first. Garbage, a forged value and another visitor's valid
// queued cookie, all before the admitted visitor's own, must not cost it its session.
TEST_F(Room, AdmittedVisitorWithPlantedCookiesBeforeItsOwnStillPasses) {
    start(room_config(origin_.url(), "total_active_users: 1, new_users_per_minute: 100"));
    visitor holder{port_}, waiting{port_};
    ASSERT_TRUE(from_origin(holder.get("/hello")));
    ASSERT_TRUE(is_queue_page(waiting.get("/hello")));
    const std::string own = holder.cookie();
    const std::string planted = waiting.cookie();
    ASSERT_NE(planted, "");

    visitor browser{port_};
    browser.set_cookie("_cfwaitingroom=not-ours!; _cfwaitingroom=x.y; " + tampered(own) + "; " +
                       planted + "; theme=dark; " + own);
    auto r = browser.get("/hello");
    EXPECT_TRUE(from_origin(r)) << describe(r);
    // And the other way round: the holder's own cookie first, the planted one after.
    browser.set_cookie(own + "; " + planted);
    EXPECT_TRUE(from_origin(browser.get("/hello")));
    // The queued visitor is not let in by sending a forged value with its own.
    waiting.set_cookie(tampered(own) + "; " + planted);
    EXPECT_TRUE(is_queue_page(waiting.get("/hello")));
}

// The cookie of a revoked session, planted before an admitted visitor's own, must not cost it
// its session: it admits nobody, so it stands for nothing.
TEST_F(Room, AdmittedVisitorWithARevokedSessionsCookiePlantedBeforeItsOwnStillPasses) {
    start(room_config(origin_.url(),
                      "total_active_users: 2, new_users_per_minute: 1000, session_duration: 5m, "
                      "enabled_origin_commands: [revoke]"));
    visitor revoked{port_}, holder{port_}, next{port_};
    ASSERT_TRUE(from_origin(revoked.get("/hello")));
    ASSERT_TRUE(from_origin(holder.get("/hello")));
    const std::string old = revoked.cookie();
    auto r = revoked.get("/headers?Cf-Waiting-Room-Command=revoke");
    ASSERT_EQ(r.status, 200u) << describe(r);
    ASSERT_NE(revoked.cookie(), old);
    // The freed place goes to the next visitor: the room is full again.
    ASSERT_TRUE(poll_until(10s, 50ms, [&] { return from_origin(next.get("/hello")); }));
    visitor replay{port_};
    replay.set_cookie(old);
    EXPECT_TRUE(is_queue_page(replay.get("/hello"))) << "the revoked session admits no more";

    visitor browser{port_};
    browser.set_cookie(old + "; " + holder.cookie());
    auto b = browser.get("/hello");
    EXPECT_TRUE(from_origin(b)) << describe(b);
}

// At most four values reach decryption: a header stuffed with forged values that each cost one
// is answered like a new visitor's request (the room is full: queued), never with an error,
// and the visitor's own cookie among the first four still counts.
TEST_F(Room, ManyPlantedCookiesCostABoundedNumberOfDecryptions) {
    start(room_config(origin_.url(), "total_active_users: 1, new_users_per_minute: 100"));
    visitor holder{port_};
    ASSERT_TRUE(from_origin(holder.get("/hello")));
    const std::string own = holder.cookie();
    const std::string forged = tampered(own);

    std::string three;
    for (int i = 0; i < 3; ++i) {
        three += forged + "; ";
    }
    visitor browser{port_};
    browser.set_cookie(three + own);
    EXPECT_TRUE(from_origin(browser.get("/hello"))) << "own cookie as the fourth value";

    std::string many;
    for (int i = 0; i < 60; ++i) {
        many += forged + "; ";
    }
    visitor stuffed{port_};
    stuffed.set_cookie(many + own);
    auto r = stuffed.get("/hello");
    EXPECT_TRUE(is_queue_page(r)) << describe(r);
    EXPECT_TRUE(from_origin(holder.get("/hello"))) << "the gateway still serves the holder";
}

TEST_F(Room, AnswersJsonWithCloudflaresFieldsToAJsonClient) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 100, "
                      "json_response_enabled: true, queueing_status_code: 429"));
    visitor a{port_}, b{port_};
    ASSERT_TRUE(from_origin(a.get("/hello")));

    auto r = b.get("/hello", true);
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 429u);
    EXPECT_EQ(header(r, "Content-Type").rfind("application/json", 0), 0u);
    EXPECT_EQ(header(r, "Cache-Control"), "no-store");
    auto doc = nlohmann::json::parse(r.body, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.body;
    ASSERT_TRUE(doc.contains("cfWaitingRoom")) << r.body;
    const auto& w = doc["cfWaitingRoom"];
    EXPECT_EQ(w.value("inWaitingRoom", false), true) << r.body;
    for (const char* field :
         {"waitTimeKnown", "waitTime", "waitTimeFormatted", "waitTime25Percentile",
          "waitTime50Percentile", "waitTime75Percentile", "queueIsFull", "queueAll", "lastUpdated",
          "refreshIntervalSeconds", "queueingMethod", "isFIFOQueue", "isRandomQueue",
          "isPassthroughQueue", "isRejectQueue", "isEventActive", "isEventPrequeueing",
          "queuePosition", "roomName"}) {
        EXPECT_TRUE(w.contains(field)) << "missing " << field << " in " << r.body;
    }
    EXPECT_EQ(w.value("queueingMethod", ""), "fifo");
    EXPECT_EQ(w.value("isFIFOQueue", false), true);
    EXPECT_EQ(w.value("roomName", ""), "Shop");
    EXPECT_EQ(origin_.requests(), 1u);
}

TEST_F(Room, AnswersHtmlToAJsonClientWhenJsonIsDisabled) {
    start(room_config(origin_.url(), "total_active_users: 1, new_users_per_minute: 100"));
    visitor a{port_}, b{port_};
    ASSERT_TRUE(from_origin(a.get("/hello")));

    auto r = b.get("/hello", true);
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(is_queue_page(r, 200)) << r.status << "\n" << r.body.substr(0, 300);
    EXPECT_EQ(header(r, "Content-Type").rfind("text/html", 0), 0u);
    EXPECT_EQ(r.body.find("cfWaitingRoom"), std::string::npos);
    EXPECT_EQ(origin_.requests(), 1u);
}

// One place, three queued visitors who arrived in distinct 10 s windows (product time). The
// admitted visitor goes idle; each queued visitor refreshes (the latest arrival first, so an
// engine that ignored arrival order would let it in) until let in, then goes idle in turn.
TEST_F(Room, AdmitsQueuedVisitorsInArrivalOrderAsSessionsExpire) {
    // Sessions of 15 s product time (3 s real): a loaded machine that stalls the holder's
    // 200 ms refresh loop for over a second must not end its session mid-test.
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 1000, session_duration: 15s, "
                      "refresh_interval: 20s",
                      time_scale));
    visitor holder{port_};
    ASSERT_TRUE(from_origin(holder.get("/hello")));

    std::vector<visitor> queued(3, visitor{port_});
    for (std::size_t i = 0; i < queued.size(); ++i) {
        auto r = queued[i].get("/hello");
        ASSERT_TRUE(is_queue_page(r, 200)) << "visitor " << i + 1 << ": " << r.status;
        // The next arrival falls in a later window. Meanwhile the holder keeps its session
        // (renewed as windows pass) and the queued keep their place.
        for (int step = 0; step < window_steps; ++step) {
            std::this_thread::sleep_for(200ms);  // time passing on purpose (see window_steps)
            ASSERT_TRUE(from_origin(holder.get("/hello"))) << "the admitted visitor lost its place";
            for (std::size_t j = 0; j <= i; ++j) {
                ASSERT_TRUE(is_queue_page(queued[j].get("/hello"), 200))
                    << "visitor " << j + 1 << " got in while the room was held";
            }
        }
    }
    const std::size_t before = origin_.requests();

    // The holder goes idle now.
    std::vector<std::size_t> order;
    std::vector<bool> in(queued.size(), false);
    bool done = poll_until(45s, 100ms, [&] {
        for (std::size_t k = queued.size(); k-- > 0;) {
            if (in[k]) {
                continue;  // admitted visitors go idle so that their session ends
            }
            auto r = queued[k].get("/hello");
            if (from_origin(r)) {
                in[k] = true;
                order.push_back(k + 1);
            } else if (!is_queue_page(r, 200)) {
                ADD_FAILURE() << "visitor " << k + 1 << ": " << r.status << " " << r.error;
                return true;
            }
        }
        return order.size() == queued.size();
    });
    ASSERT_TRUE(done) << "only " << order.size() << " of 3 got in";
    EXPECT_EQ(order, (std::vector<std::size_t>{1, 2, 3}));
    EXPECT_EQ(origin_.requests(), before + 3) << "queued refreshes reached the origin";
}

TEST_F(Room, QueuesATamperedCookieAsANewVisitorAtTheBack) {
    // Sessions of 15 s product time (3 s real), as in the arrival-order test above.
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 1000, session_duration: 15s",
                      time_scale));
    visitor a{port_}, b{port_};
    ASSERT_TRUE(from_origin(a.get("/hello")));
    auto first = b.get("/hello");
    ASSERT_TRUE(is_queue_page(first, 200)) << first.status << " " << first.error << "\n"
                                           << first.body.substr(0, 300);
    // A later window (product time) than b's arrival; a keeps its session meanwhile.
    for (int step = 0; step < window_steps; ++step) {
        std::this_thread::sleep_for(200ms);  // time passing on purpose (see window_steps)
        ASSERT_TRUE(from_origin(a.get("/hello")));
        auto rb = b.get("/hello");
        ASSERT_TRUE(is_queue_page(rb, 200))
            << "step " << step << ": " << rb.status << " " << rb.error << "\n"
            << rb.body.substr(0, 300);
    }
    const std::size_t before = origin_.requests();

    std::string genuine = a.cookie();
    a.set_cookie(tampered(genuine));
    auto r = a.get("/hello");
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(is_queue_page(r, 200)) << r.status << "\n" << r.body.substr(0, 300);
    EXPECT_EQ(origin_.requests(), before) << "a tampered cookie reached the origin";
    EXPECT_NE(a.cookie(), tampered(genuine)) << "no fresh cookie for the new visitor";

    // The genuine session goes idle and ends; b, who arrived first, gets in before the
    // tampered visitor, who refreshes first in every round.
    bool b_in = false;
    bool a_in = false;
    ASSERT_TRUE(poll_until(30s, 100ms, [&] {
        a_in = from_origin(a.get("/hello"));
        b_in = from_origin(b.get("/hello"));
        return a_in || b_in;
    }));
    EXPECT_TRUE(b_in);
    EXPECT_FALSE(a_in) << "the tampered visitor jumped the queue";
}

TEST_F(Room, QueuesANewVisitorInAnEmptyRoomWithQueueAll) {
    start(room_config(origin_.url(),
                      "total_active_users: 10, new_users_per_minute: 100, queue_all: true, "
                      "json_response_enabled: true"));
    visitor v{port_};
    auto r = v.get("/hello");
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(is_queue_page(r, 200)) << r.status << "\n" << r.body.substr(0, 300);
    EXPECT_NE(v.cookie(), "");
    auto j = nlohmann::json::parse(v.get("/hello", true).body, nullptr, false);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["cfWaitingRoom"].value("queueAll", false), true);
    EXPECT_FALSE(origin_.saw_any_request());
}

TEST_F(Room, ProxiesWithoutAnyCookieWhenSuspended) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 100, suspended: true"));
    for (int i = 0; i < 3; ++i) {
        visitor v{port_};
        auto r = v.get("/hello");
        ASSERT_EQ(r.error, "");
        EXPECT_TRUE(from_origin(r)) << "visitor " << i + 1 << ": " << r.status;
        EXPECT_EQ(set_cookie_count(r), 0u) << header(r, "Set-Cookie");
    }
    EXPECT_EQ(origin_.requests(), 3u);
}

TEST_F(Room, ServesTheRejectPageWithoutContactingTheOriginWhenFull) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 100, queueing_method: reject"));
    visitor a{port_}, b{port_};
    ASSERT_TRUE(from_origin(a.get("/hello")));

    auto r = b.get("/hello");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_NE(r.body.find("This page is not available right now"), std::string::npos)
        << r.body.substr(0, 300);
    EXPECT_EQ(r.body.find("You are in line"), std::string::npos);
    EXPECT_EQ(header(r, "Cache-Control"), "no-store");
    EXPECT_EQ(header(r, "Refresh"), "");
    EXPECT_EQ(set_cookie_count(r), 0u);
    EXPECT_EQ(origin_.requests(), 1u);
}

TEST_F(Room, PassesBypassedPathsUntouchedUncountedAndWithoutACookie) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 100, "
                      "bypass: [{path_prefix: /static/}]"));
    // Many new visitors on bypassed paths take no place in the room.
    for (int i = 0; i < 5; ++i) {
        visitor v{port_};
        auto r = v.get("/static/app.css?v=" + std::to_string(i));
        ASSERT_EQ(r.error, "");
        EXPECT_EQ(r.status, 404u);  // the test origin's answer for an unknown route
        EXPECT_EQ(set_cookie_count(r), 0u);
        EXPECT_EQ(origin_.last_request().target, "/static/app.css?v=" + std::to_string(i));
    }
    ASSERT_EQ(origin_.requests(), 5u);

    visitor a{port_}, b{port_};
    ASSERT_TRUE(from_origin(a.get("/hello"))) << "bypassed requests were counted";
    ASSERT_TRUE(is_queue_page(b.get("/hello"), 200));
    ASSERT_EQ(origin_.requests(), 6u);

    // The room is full; its static files are still served, to the queued visitor too.
    auto s = b.get("/static/logo.png");
    EXPECT_EQ(s.status, 404u);
    EXPECT_EQ(set_cookie_count(s), 0u);
    EXPECT_EQ(origin_.requests(), 7u);
    EXPECT_EQ(origin_.last_request().target, "/static/logo.png");
}

TEST_F(Room, EndsASessionOnTheOriginsRevokeCommandAndHidesTheHeader) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 1000, session_duration: 5m, "
                      "enabled_origin_commands: [revoke]",
                      time_scale));
    visitor a{port_}, b{port_};
    ASSERT_TRUE(from_origin(a.get("/hello")));
    ASSERT_TRUE(is_queue_page(b.get("/hello"), 200));
    // b's arrival window closes (product time) before a's session is revoked.
    for (int step = 0; step < window_steps; ++step) {
        std::this_thread::sleep_for(200ms);  // time passing on purpose (see window_steps)
        ASSERT_TRUE(from_origin(a.get("/hello")));
        ASSERT_TRUE(is_queue_page(b.get("/hello"), 200));
    }

    std::string admitted_cookie = a.cookie();
    auto r = a.get("/headers?Cf-Waiting-Room-Command=revoke");
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "ok\n");
    EXPECT_EQ(header(r, "Cf-Waiting-Room-Command"), "");
    EXPECT_EQ(set_cookie_count(r), 1u);
    EXPECT_NE(a.cookie(), admitted_cookie);

    // a is no longer admitted: it waits behind b, who got in first.
    const std::size_t before = origin_.requests();
    auto next = a.get("/hello");
    EXPECT_TRUE(is_queue_page(next, 200)) << next.status << "\n" << next.body.substr(0, 300);
    EXPECT_EQ(origin_.requests(), before);
    ASSERT_TRUE(poll_until(20s, 100ms, [&] { return from_origin(b.get("/hello")); }))
        << "the revoked session did not free its place";
    EXPECT_TRUE(is_queue_page(a.get("/hello"), 200));
}

// A new visitor admitted for a request the origin then fails: the gateway's own 502 carries the
// admission cookie, so the place the room counted is the visitor's (the next visitor queues) and
// the cookie passes as admitted.
TEST_F(Room, NewVisitorsCookieComesWithTheBadGatewayWhenTheOriginIsDown) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 1000, session_duration: 5m"));
    origin_.stop();
    visitor a{port_}, b{port_};
    // Refused or unanswered, depending on what the stopped origin's port does: 502 or 504.
    auto origin_error = [](const http_response& r) { return r.status == 502 || r.status == 504; };
    auto r = a.get("/hello");
    ASSERT_EQ(r.error, "");
    EXPECT_TRUE(origin_error(r)) << r.status << "\n" << r.body;
    EXPECT_EQ(set_cookie_count(r), 1u);
    EXPECT_NE(a.cookie(), "");
    EXPECT_TRUE(is_queue_page(b.get("/hello"), 200)) << "the place went to nobody";
    auto again = a.get("/hello");  // admitted: forwarded (and failed) again, not queued
    EXPECT_TRUE(origin_error(again)) << again.status << "\n" << again.body.substr(0, 300);
}

TEST_F(Room, NewVisitorsCookieComesWithTheGatewayTimeoutAndThenAdmits) {
    start(room_config(origin_.url(),
                      "total_active_users: 1, new_users_per_minute: 1000, session_duration: 5m"));
    visitor a{port_}, b{port_};
    auto r = a.get("/slow?ms=4000");  // the origin timeout is 2 s
    ASSERT_EQ(r.error, "");
    EXPECT_EQ(r.status, 504u) << r.body;
    EXPECT_EQ(set_cookie_count(r), 1u);
    EXPECT_TRUE(is_queue_page(b.get("/hello"), 200)) << "the place went to nobody";
    EXPECT_TRUE(from_origin(a.get("/hello"))) << "the cookie of the 504 does not admit";
}

// A new visitor admitted for a request whose body then fails (too large, malformed, too slow):
// the gateway's 413/400/408 carries the admission cookie, as its 502 does.
TEST_F(Room, NewVisitorsCookieComesWithTheAnswerToABadRequestBody) {
    std::string cfg = room_config(
        origin_.url(), "total_active_users: 3, new_users_per_minute: 1000, session_duration: 5m");
    const std::string limits = "drain_timeout: 10s}";
    ASSERT_NE(cfg.find(limits), std::string::npos);
    cfg.replace(cfg.find(limits), limits.size(), "drain_timeout: 10s, body_timeout: 2s}");
    start(cfg);
    const std::vector<std::pair<std::string, unsigned>> bodies = {
        {"zz\r\n", 400u},                              // not a chunk size
        {std::string(70'000, '0') + "1\r\n", 400u},    // a chunk line past its bound
        {"10000\r\n" + std::string(40'000, 'x'), 0u},  // stalls mid-body: 408
    };
    for (const auto& [body, status] : bodies) {
        client_connection c(port_, 20s);
        ASSERT_TRUE(c.connected());
        ASSERT_TRUE(
            c.write_raw("POST /echo HTTP/1.1\r\nHost: shop.test\r\nExpect: 100-continue\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n"));
        // The room decides on the head alone; its 100 Continue says the visitor is in, and only
        // then does the body go.
        auto go_on = c.read_response();
        ASSERT_EQ(go_on.status, 100u) << describe(go_on);
        c.write_raw(body);
        auto r = c.read_response();
        ASSERT_EQ(r.error, "") << body.substr(0, 20);
        if (status != 0) {
            EXPECT_EQ(r.status, status) << describe(r);
        } else {
            EXPECT_EQ(r.status, 408u) << describe(r);
        }
        EXPECT_EQ(set_cookie_count(r), 1u) << describe(r);
        EXPECT_NE(header(r, "Set-Cookie").find(std::string(cookie_name) + "="), std::string::npos);
    }
    visitor d{port_};
    EXPECT_TRUE(is_queue_page(d.get("/hello"), 200)) << "three places were counted";
}

// Two workers under a time scale: the sync task's lease times follow the scaled clock, so a
// lease does not lapse between syncs and a top-up cannot hand a lapsed lease back before the
// other worker's counts arrive (which once admitted a second visitor into a room of one).
TEST_F(Room, NeverAdmitsOverTheLimitAcrossWorkersUnderTimeScale) {
    std::string yaml = room_config(origin_.url(),
                                   "total_active_users: 1, new_users_per_minute: 1000, "
                                   "session_duration: 5m");
    yaml += "testing: {time_scale: 20}\n";
    start(yaml);
    visitor a{port_};
    ASSERT_TRUE(from_origin(a.get("/hello")));
    int admitted = 0;
    for (int i = 0; i < 20; ++i) {
        visitor v{port_};
        admitted += from_origin(v.get("/hello")) ? 1 : 0;
        std::this_thread::sleep_for(20ms);  // the pace of the arrivals, over several syncs
    }
    EXPECT_EQ(admitted, 0) << "visitors admitted into a full room of one";
}

}  // namespace
}  // namespace waitroom::test
