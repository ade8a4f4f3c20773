// The admin listener of a running waitroomd: the bearer token, room status, run-time room
// changes seen at once by the public listener (and kept across a reload of an unchanged file),
// metrics counters moving by exactly the traffic sent, and readiness during a drain.

#include <nlohmann/json.hpp>

#include <csignal>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr std::string_view token = "s3cret-admin-token";

// One room `shop` on host shop.test; `room` adds settings to its flow mapping.
std::string admin_config(const std::string& origin_url, const std::string& token_file,
                         const std::string& room = "") {
    std::ostringstream extra;
    extra << "admin: {listen: \"127.0.0.1:0\", token_file: \"" << token_file << "\"}\n"
          << "state: {backend: local, sync_interval: 50ms}\n"
          << "rooms:\n  - {id: shop, name: Shop, host: shop.test, total_active_users: 1000, "
          << "new_users_per_minute: 1000, session_duration: 5m" << (room.empty() ? "" : ", ")
          << room << "}\n";
    return proxy_config(origin_url, extra.str());
}

// A new visitor (no cookie) asking for /hello in the room.
http_response new_visitor(std::uint16_t port) {
    client_connection c(port);
    http::request<http::string_body> req{http::verb::get, "/hello", 11};
    req.set(http::field::host, "shop.test");
    return c.request(std::move(req));
}

class Admin : public daemon_test {
  protected:
    void start_admin(const std::string& room = "") {
        token_file_ = dir_.write("admin.token", std::string(token) + "\n");
        start(admin_config(origin_.url(), token_file_, room));
        if (port_ == 0) {
            return;
        }
        admin_port_ = announced_admin_port();
    }

    // One admin request; `bearer` "" sends no Authorization header.
    http_response admin(http::verb method, const std::string& target,
                        std::string_view bearer = token, const std::string& body = "") {
        client_connection c(admin_port_);
        http::request<http::string_body> req{method, target, 11};
        if (!bearer.empty()) {
            req.set(http::field::authorization, "Bearer " + std::string(bearer));
        }
        if (!body.empty()) {
            req.set(http::field::content_type, "application/json");
            req.body() = body;
            req.prepare_payload();
        }
        return c.request(std::move(req));
    }

    json status() {
        auto r = admin(http::verb::get, "/rooms/shop/status");
        EXPECT_EQ(r.status, 200u) << r.body << r.error;
        return json::parse(r.body, nullptr, false);
    }

    http_response patch(const std::string& body) {
        return admin(http::verb::patch, "/rooms/shop", token, body);
    }

    std::string scrape() {
        auto r = admin(http::verb::get, "/metrics");
        EXPECT_EQ(r.status, 200u) << r.body << r.error;
        return r.body;
    }

    std::string token_file_;
    std::uint16_t admin_port_ = 0;
};

TEST_F(Admin, HealthzAnswersWithoutAToken) {
    start_admin();
    auto r = admin(http::verb::get, "/healthz", "");
    EXPECT_EQ(r.status, 200u) << r.body << r.error;
}

TEST_F(Admin, EveryOtherEndpointAsksForTheTokenAndRefusesAWrongOne) {
    start_admin();
    for (const char* target :
         {"/readyz", "/metrics", "/rooms", "/rooms/shop/status", "/rooms/shop/preview"}) {
        SCOPED_TRACE(target);
        EXPECT_EQ(admin(http::verb::get, target, "").status, 401u);
        EXPECT_EQ(admin(http::verb::get, target, "not-the-token").status, 403u);
        EXPECT_EQ(admin(http::verb::get, target).status, 200u);
    }
    EXPECT_EQ(admin(http::verb::patch, "/rooms/shop", "", R"({"queue_all": true})").status, 401u);
    EXPECT_EQ(admin(http::verb::patch, "/rooms/shop", "nope", R"({"queue_all": true})").status,
              403u);
    // Refused requests changed nothing.
    EXPECT_FALSE(status().value("queue_all", true));
}

TEST_F(Admin, RoomStatusCarriesCloudflaresFieldsAndTheRoomsLimitsAndActivity) {
    start_admin();
    auto list = admin(http::verb::get, "/rooms");
    ASSERT_EQ(list.status, 200u) << list.body;
    auto rooms = json::parse(list.body, nullptr, false);
    ASSERT_FALSE(rooms.is_discarded()) << list.body;
    const json* arr =
        rooms.is_array() ? &rooms : (rooms.contains("rooms") ? &rooms["rooms"] : nullptr);
    ASSERT_NE(arr, nullptr) << list.body;
    ASSERT_EQ(arr->size(), 1u) << list.body;
    EXPECT_EQ((*arr)[0].value("id", ""), "shop");

    auto s = status();
    EXPECT_EQ(s.value("status", ""), "not_queueing");
    EXPECT_EQ(s.value("event_id", "x"), "");
    EXPECT_EQ(s.value("estimated_queued_users", -1), 0);
    EXPECT_EQ(s.value("max_estimated_time_minutes", -1), 0);
    EXPECT_EQ(s["limits"].value("total_active_users", 0), 1000);
    EXPECT_EQ(s["limits"].value("new_users_per_minute", 0), 1000);
    EXPECT_FALSE(s.value("degraded", true));
    EXPECT_FALSE(s.value("queue_all", true));
    EXPECT_FALSE(s.value("suspended", true));

    ASSERT_TRUE(from_origin(new_visitor(port_)));
    ASSERT_TRUE(from_origin(new_visitor(port_)));
    // The counts arrive with the next sync (every 50 ms).
    EXPECT_TRUE(poll_until(10s, [&] {
        auto now = status();
        return now.value("estimated_total_active_users", 0) == 2 &&
               now.value("admitted_this_minute", 0) == 2 && now.value("nodes", 0) == 1;
    })) << status().dump();
}

TEST_F(Admin, PatchQueueAllQueuesTheNextNewVisitorAtOnceWithoutTouchingTheOrigin) {
    start_admin();
    ASSERT_TRUE(from_origin(new_visitor(port_)));
    auto r = patch(R"({"queue_all": true})");
    ASSERT_EQ(r.status, 200u) << r.body;
    auto body = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(body.value("queue_all", false)) << r.body;
    EXPECT_EQ(body.value("status", ""), "queueing") << r.body;

    const auto before = origin_.requests();
    for (int i = 0; i < 4; ++i) {
        auto q = new_visitor(port_);
        EXPECT_TRUE(is_queue_page(q)) << q.status << " " << q.body.substr(0, 200);
    }
    EXPECT_EQ(origin_.requests(), before);

    ASSERT_EQ(patch(R"({"queue_all": false})").status, 200u);
    EXPECT_TRUE(from_origin(new_visitor(port_)));
    EXPECT_EQ(origin_.requests(), before + 1);
}

TEST_F(Admin, PatchSuspendedProxiesVisitorsWithoutACookie) {
    start_admin();
    auto r = patch(R"({"suspended": true})");
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(json::parse(r.body, nullptr, false).value("status", ""), "suspended") << r.body;

    const auto before = origin_.requests();
    auto v = new_visitor(port_);
    EXPECT_TRUE(from_origin(v)) << v.status << " " << v.body;
    EXPECT_EQ(v.headers.count(http::field::set_cookie), 0u);
    EXPECT_EQ(origin_.requests(), before + 1);
    EXPECT_TRUE(status().value("suspended", false));
}

TEST_F(Admin, PatchOfAnUnknownRoomIsNotFound) {
    start_admin();
    EXPECT_EQ(admin(http::verb::patch, "/rooms/nope", token, R"({"queue_all": true})").status,
              404u);
}

TEST_F(Admin, PreviewRendersEveryStateAndLanguageWithoutTouchingTheRoom) {
    start_admin();
    const auto metrics_before = scrape();
    const auto requests_before = origin_.requests();
    struct probe {
        const char* query;
        const char* text;  // a phrase only that page has
    };
    for (const auto& [query, text] : {
             probe{"", "(137) You are in line – Shop"},
             probe{"?state=queued&lang=de-DE", "(137) Sie sind in der Warteschlange – Shop"},
             probe{"?state=event&lang=fr-fr", "Vous attendez le début de l’événement"},
             probe{"?state=event&lang=ja-JP", "イベントの開始をお待ちください"},
             probe{"?state=reject", "This page is not available right now"},
         }) {
        SCOPED_TRACE(query);
        auto r = admin(http::verb::get, std::string("/rooms/shop/preview") + query);
        EXPECT_EQ(r.status, 200u) << r.body;
        EXPECT_NE(r.body.find(text), std::string::npos) << r.body.substr(0, 600);
        EXPECT_EQ(r.headers[http::field::content_type], "text/html; charset=utf-8");
    }
    // No visitor was made up: no counter moved, the room holds nobody, the origin saw nothing.
    const auto metrics_after = scrape();
    for (const char* series : {R"(waitroom_room_admitted_total{room="shop"})",
                               R"(waitroom_room_queued_total{room="shop"})"}) {
        EXPECT_EQ(metric(metrics_after, series), metric(metrics_before, series)) << series;
    }
    auto s = status();
    EXPECT_EQ(s.value("estimated_queued_users", -1), 0);
    EXPECT_EQ(s.value("estimated_total_active_users", -1), 0);
    EXPECT_EQ(origin_.requests(), requests_before);
}

TEST_F(Admin, PreviewRefusesBadQueriesAndUnknownRoomsClearly) {
    start_admin();
    struct probe {
        const char* target;
        unsigned status;
        const char* error;
    };
    for (const auto& [target, code, error] : {
             probe{"/rooms/shop/preview?state=soon", 400, "state must be queued, event or reject"},
             probe{"/rooms/shop/preview?lang=%22%3E%3Cscript%3E", 400,
                   "lang must be a language tag like de-DE"},
             probe{"/rooms/shop/preview?lang=es-ES", 400,
                   "lang must be one of en-US, de-DE, fr-FR, ja-JP"},
             probe{"/rooms/nope/preview?state=queued", 404, "no such room"},
         }) {
        SCOPED_TRACE(target);
        auto r = admin(http::verb::get, target);
        EXPECT_EQ(r.status, code) << r.body;
        EXPECT_EQ(json::parse(r.body, nullptr, false).value("error", ""), error) << r.body;
    }
}

TEST_F(Admin, PreviewShowsTheRoomsCustomTemplate) {
    const auto page = dir_.write("page.html",
                                 "custom {{roomName}} {{queuePositionTitle}}"
                                 "{{#isRejectQueue}}turned away{{/isRejectQueue}}");
    start_admin("custom_page_html: \"" + page + "\"");
    auto queued = admin(http::verb::get, "/rooms/shop/preview?state=queued");
    EXPECT_EQ(queued.status, 200u) << queued.body;
    EXPECT_EQ(queued.body, "custom Shop (137) ");
    auto reject = admin(http::verb::get, "/rooms/shop/preview?state=reject&lang=de-DE");
    EXPECT_EQ(reject.body, "custom Shop turned away");
}

TEST_F(Admin, OverrideSurvivesAReloadOfAnUnchangedFileAndGoesWhenTheFileChangesIt) {
    start_admin();
    ASSERT_EQ(patch(R"({"queue_all": true})").status, 200u);
    ASSERT_TRUE(is_queue_page(new_visitor(port_)));

    proc().send_signal(SIGHUP);
    ASSERT_TRUE(proc().wait_for_output("configuration reloaded", 10s)) << output();
    EXPECT_TRUE(is_queue_page(new_visitor(port_)));
    EXPECT_TRUE(status().value("queue_all", false));

    // The file now sets queue_all itself: the operator's switch gives way to it...
    dir_.write("config.yaml", admin_config(origin_.url(), token_file_, "queue_all: true"));
    proc().send_signal(SIGHUP);
    ASSERT_TRUE(poll_until(10s, [&] { return proc().count_output("configuration reloaded") == 2; }))
        << output();
    EXPECT_EQ(proc().count_output("shop.queue_all"), 1u) << output();
    EXPECT_TRUE(is_queue_page(new_visitor(port_)));

    // ...so turning it off in the file opens the room.
    dir_.write("config.yaml", admin_config(origin_.url(), token_file_, "queue_all: false"));
    proc().send_signal(SIGHUP);
    ASSERT_TRUE(poll_until(10s, [&] { return proc().count_output("configuration reloaded") == 3; }))
        << output();
    EXPECT_TRUE(from_origin(new_visitor(port_)));
}

TEST_F(Admin, MetricsCountersMoveByExactlyTheTrafficSent) {
    start_admin();
    const std::string admitted = R"(waitroom_room_admitted_total{room="shop"})";
    const std::string queued = R"(waitroom_room_queued_total{room="shop"})";
    const std::string ok = R"(waitroom_http_requests_total{code="2xx"})";
    constexpr int n = 7;

    auto t0 = scrape();
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(from_origin(new_visitor(port_)));
    }
    // A request is counted once its answer is written, a moment after the client has it: wait
    // for the last one to be counted, then every counter must have moved by exactly n.
    auto counted = [&](const std::string& before, int k) {
        std::string now;
        poll_until(5s, [&] {
            now = scrape();
            return metric(now, ok) - metric(before, ok) >= k;
        });
        return now;
    };
    auto t1 = counted(t0, n);
    EXPECT_EQ(metric(t1, admitted) - metric(t0, admitted), n) << t1;
    EXPECT_EQ(metric(t1, queued) - metric(t0, queued), 0) << t1;
    EXPECT_EQ(metric(t1, ok) - metric(t0, ok), n) << t1;

    ASSERT_EQ(patch(R"({"queue_all": true})").status, 200u);
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(is_queue_page(new_visitor(port_)));
    }
    auto t2 = counted(t1, n);
    EXPECT_EQ(metric(t2, admitted) - metric(t1, admitted), 0) << t2;
    EXPECT_EQ(metric(t2, queued) - metric(t1, queued), n) << t2;
    EXPECT_EQ(metric(t2, ok) - metric(t1, ok), n) << t2;
    // The gauges are the node's snapshot: the admitted visitors hold sessions.
    EXPECT_TRUE(poll_until(
        10s, [&] { return metric(scrape(), R"(waitroom_room_active_users{room="shop"})") == n; }));
}

TEST_F(Admin, MetricsShowStoreSyncRoundTripsAndLeaseTopUps) {
    // Syncs 2 s apart: the first, at startup, leases one slot (no demand yet), so a burst of
    // new visitors before the next sync can only be admitted through top-ups.
    token_file_ = dir_.write("admin.token", std::string(token) + "\n");
    std::string yaml = admin_config(origin_.url(), token_file_);
    const std::string fast = "sync_interval: 50ms";
    ASSERT_NE(yaml.find(fast), std::string::npos);
    yaml.replace(yaml.find(fast), fast.size(), "sync_interval: 2s");
    start(yaml);
    ASSERT_NE(port_, 0);
    admin_port_ = announced_admin_port();
    ASSERT_NE(admin_port_, 0);

    const std::string syncs = "waitroom_store_sync_duration_seconds_count";
    const std::string top_ups = R"(waitroom_room_lease_top_ups_total{room="shop"})";
    const std::string admitted = R"(waitroom_room_admitted_total{room="shop"})";
    // The startup sync is observed once it has completed.
    ASSERT_TRUE(poll_until(10s, [&] { return metric(scrape(), syncs) >= 1; })) << scrape();
    auto t0 = scrape();
    EXPECT_NE(t0.find("# TYPE waitroom_store_sync_duration_seconds histogram"), std::string::npos);
    EXPECT_EQ(metric(t0, R"(waitroom_store_sync_duration_seconds_bucket{le="+Inf"})"),
              metric(t0, syncs));

    constexpr int n = 10;
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE(from_origin(new_visitor(port_)));
    }
    auto t1 = scrape();  // counted at the decision, before the answer goes out
    EXPECT_EQ(metric(t1, admitted) - metric(t0, admitted), n) << t1;
    EXPECT_GE(metric(t1, top_ups) - metric(t0, top_ups), 1) << t1;
    // The next timed sync adds one more observation.
    const double before = metric(t1, syncs);
    EXPECT_TRUE(poll_until(10s, [&] { return metric(scrape(), syncs) > before; })) << scrape();
}

TEST_F(Admin, ReadyzTurnsUnavailableAsSoonAsADrainStarts) {
    // A slow response (3 s; origin.timeout 10 s) holds the drain open while /readyz is asked.
    token_file_ = dir_.write("admin.token", std::string(token) + "\n");
    start(with_origin_timeout(admin_config(origin_.url(), token_file_), "10s"));
    ASSERT_NE(port_, 0);
    admin_port_ = announced_admin_port();
    auto ready = admin(http::verb::get, "/readyz");
    EXPECT_EQ(ready.status, 200u) << ready.body;

    client_connection c(port_);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.write_raw("GET /slow?ms=3000 HTTP/1.1\r\nHost: shop.test\r\n\r\n"));
    ASSERT_TRUE(poll_until(10s, [&] { return origin_.requests() == 1; })) << output();

    proc().send_signal(SIGTERM);
    ASSERT_TRUE(proc().wait_for_output("draining", 5s)) << output();
    auto draining = admin(http::verb::get, "/readyz");
    EXPECT_EQ(draining.status, 503u) << draining.body << draining.error;
    EXPECT_NE(draining.body.find("draining"), std::string::npos) << draining.body;

    auto r = c.read_response();
    EXPECT_EQ(r.status, 200u) << r.error;
    auto code = proc().wait_exit(15s);
    ASSERT_TRUE(code.has_value()) << output();
    EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace waitroom::test
