// The admin listener on 127.0.0.1 port 0 with a fake backend: every endpoint with and without the
// token, the error answers and their JSON bodies, PATCH reaching the backend, /readyz flipping.
#include "waitroom/admin/admin_server.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "admin/admin_fake_backend.hpp"
#include "support/test_client.hpp"

namespace waitroom::admin {
namespace {

namespace http = boost::beast::http;
using json = nlohmann::json;
using test::request;
using test::response;

constexpr const char* token = "s3cret-Token_1";

admin_room_status shop_room() {
    admin_room_status s;
    s.id = "shop";
    s.status = room_queue_status::queueing;
    s.event_id = 0;
    s.estimated_queued_users = 120;
    s.estimated_total_active_users = 500;
    s.max_estimated_time_minutes = 4;
    s.total_active_users = 500;
    s.new_users_per_minute = 200;
    s.admitted_this_minute = 180;
    s.nodes = 2;
    return s;
}

admin_room_status launch_room() {
    admin_room_status s;
    s.id = "launch";
    s.status = room_queue_status::event_prequeueing;
    s.event_id = 12345;
    s.total_active_users = 100;
    s.new_users_per_minute = 50;
    s.nodes = 2;
    return s;
}

class AdminServer : public ::testing::Test {
  protected:
    void SetUp() override {
        backend_ = std::make_shared<test::fake_admin_backend>();
        backend_->add_room(shop_room());
        backend_->add_room(launch_room());
        backend_->set_metrics("waitroom_x_total 3\n");
        server_ = std::make_unique<admin_server>(ioc_, backend_);
        server_->set_token(std::string(token));
        server_->start({boost::asio::ip::make_address("127.0.0.1"), 0});
        port_ = server_->local_endpoint().port();
        work_ = std::make_unique<work_guard>(ioc_.get_executor());
        thread_ = std::thread([this] { ioc_.run(); });
    }

    void TearDown() override {
        server_->stop();
        work_.reset();
        thread_.join();
    }

    response call(http::verb method, std::string target, std::string auth = {},
                  std::string body = {}) {
        test::test_client client(port_);
        request req{method, target, 11};
        if (!auth.empty()) {
            req.set(http::field::authorization, auth);
        }
        if (!body.empty() || method == http::verb::patch) {
            req.set(http::field::content_type, "application/json");
            req.body() = body;
        }
        return client.send(std::move(req));
    }
    response get(std::string target, std::string auth = std::string("Bearer ") + token) {
        return call(http::verb::get, std::move(target), std::move(auth));
    }
    response patch(std::string target, std::string body) {
        return call(http::verb::patch, std::move(target), std::string("Bearer ") + token,
                    std::move(body));
    }

    static json body_of(const response& r) { return json::parse(r.body()); }

    using work_guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
    boost::asio::io_context ioc_;
    std::shared_ptr<test::fake_admin_backend> backend_;
    std::unique_ptr<admin_server> server_;
    std::unique_ptr<work_guard> work_;
    std::thread thread_;
    std::uint16_t port_ = 0;
};

TEST_F(AdminServer, AnswersHealthzWithoutAToken) {
    auto r = get("/healthz", "");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r[http::field::content_type], "application/json");
    EXPECT_EQ(body_of(r), (json{{"status", "ok"}}));
}

TEST_F(AdminServer, ServesTheDashboardPageWithoutAToken) {
    auto r = get("/", "");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(r[http::field::content_type], "text/html; charset=utf-8");
    EXPECT_NE(r.body().find("<html"), std::string::npos);
    EXPECT_NE(std::string(r["Content-Security-Policy"]).find("default-src 'none'"),
              std::string::npos);
}

TEST_F(AdminServer, RefusesEveryOtherEndpointWithoutAToken) {
    for (const char* path : {"/readyz", "/metrics", "/rooms", "/rooms/shop/status",
                             "/rooms/shop/preview?state=queued", "/nowhere"}) {
        auto r = get(path, "");
        EXPECT_EQ(r.result_int(), 401) << path;
        EXPECT_EQ(r[http::field::www_authenticate], "Bearer realm=\"waitroom-admin\"") << path;
        EXPECT_EQ(body_of(r), (json{{"error", "missing bearer token"}})) << path;
    }
    auto p = call(http::verb::patch, "/rooms/shop", "", R"({"queue_all": true})");
    EXPECT_EQ(p.result_int(), 401);
    EXPECT_TRUE(backend_->patches().empty());
    EXPECT_TRUE(backend_->previews().empty());
}

TEST_F(AdminServer, RefusesAMalformedAuthorizationHeaderWith401) {
    for (const char* auth :
         {"Basic dXNlcjpwYXNz", "Bearer", "Bearer a b", "Bearer tok\"en", "s3cret-Token_1"}) {
        auto r = get("/rooms", auth);
        EXPECT_EQ(r.result_int(), 401) << auth;
        EXPECT_TRUE(body_of(r).contains("error")) << auth;
        EXPECT_NE(std::string(r[http::field::www_authenticate]).find("invalid_request"),
                  std::string::npos)
            << auth;
    }
}

TEST_F(AdminServer, RefusesAWrongTokenWith403) {
    for (const char* auth : {"Bearer s3cret-Token_2", "Bearer s3cret-Token_1x", "Bearer x"}) {
        auto r = get("/rooms", auth);
        EXPECT_EQ(r.result_int(), 403) << auth;
        EXPECT_EQ(body_of(r), (json{{"error", "wrong bearer token"}})) << auth;
    }
}

TEST_F(AdminServer, AcceptsTheBearerSchemeInAnyCase) {
    EXPECT_EQ(get("/rooms", std::string("bearer ") + token).result_int(), 200);
    EXPECT_EQ(get("/rooms", std::string("BEARER ") + token).result_int(), 200);
}

TEST_F(AdminServer, ListsRoomsWithTheirStatus) {
    auto r = get("/rooms");
    ASSERT_EQ(r.result_int(), 200);
    auto rooms = body_of(r).at("rooms");
    ASSERT_EQ(rooms.size(), 2u);
    EXPECT_EQ(rooms[0].at("id"), "shop");
    EXPECT_EQ(rooms[0].at("status"), "queueing");
    EXPECT_EQ(rooms[1].at("id"), "launch");
    EXPECT_EQ(rooms[1].at("status"), "event_prequeueing");
}

TEST_F(AdminServer, AnswersRoomStatusWithCloudflaresFieldsAndOurs) {
    auto r = get("/rooms/shop/status");
    ASSERT_EQ(r.result_int(), 200);
    EXPECT_EQ(body_of(r),
              (json{
                  {"id", "shop"},
                  {"status", "queueing"},
                  {"event_id", ""},
                  {"estimated_queued_users", 120},
                  {"estimated_total_active_users", 500},
                  {"max_estimated_time_minutes", 4},
                  {"limits", {{"total_active_users", 500}, {"new_users_per_minute", 200}}},
                  {"admitted_this_minute", 180},
                  {"nodes", 2},
                  {"degraded", false},
                  {"queue_all", false},
                  {"suspended", false},
              }));
    EXPECT_EQ(body_of(get("/rooms/launch/status")).at("event_id"), "12345");
}

TEST_F(AdminServer, AnswersUnknownPathsAndRoomsWith404) {
    for (const char* path :
         {"/nowhere", "/rooms/", "/rooms/shop/status/x", "/roomsx", "/rooms/nope/status"}) {
        auto r = get(path);
        EXPECT_EQ(r.result_int(), 404) << path;
        EXPECT_TRUE(body_of(r).at("error").is_string()) << path;
    }
    EXPECT_EQ(body_of(get("/rooms/nope/status")), (json{{"error", "no such room"}}));
    auto p = patch("/rooms/nope", R"({"queue_all": true})");
    EXPECT_EQ(p.result_int(), 404);
    EXPECT_TRUE(backend_->patches().empty());
}

TEST_F(AdminServer, AnswersWrongMethodsWith405AndAllow) {
    struct probe {
        http::verb method;
        const char* path;
        const char* allow;
    };
    for (auto [method, path, allow] :
         {probe{http::verb::post, "/healthz", "GET"}, probe{http::verb::post, "/readyz", "GET"},
          probe{http::verb::delete_, "/metrics", "GET"}, probe{http::verb::post, "/rooms", "GET"},
          probe{http::verb::patch, "/rooms/shop/status", "GET"},
          probe{http::verb::get, "/rooms/shop", "PATCH"},
          probe{http::verb::put, "/rooms/shop", "PATCH"}, probe{http::verb::post, "/", "GET"}}) {
        auto r = call(method, path, std::string("Bearer ") + token);
        EXPECT_EQ(r.result_int(), 405) << path;
        EXPECT_EQ(r[http::field::allow], allow) << path;
        EXPECT_EQ(body_of(r), (json{{"error", "method not allowed"}})) << path;
    }
}

TEST_F(AdminServer, ServesMetricsAsPrometheusText) {
    auto r = get("/metrics");
    ASSERT_EQ(r.result_int(), 200);
    EXPECT_EQ(r[http::field::content_type], "text/plain; version=0.0.4; charset=utf-8");
    EXPECT_EQ(r.body(), "waitroom_x_total 3\n");
}

TEST_F(AdminServer, FlipsReadyzWhileNotReady) {
    auto r = get("/readyz");
    EXPECT_EQ(r.result_int(), 200);
    EXPECT_EQ(body_of(r), (json{{"status", "ready"}}));

    backend_->set_readiness({false, "draining"});
    r = get("/readyz");
    EXPECT_EQ(r.result_int(), 503);
    EXPECT_EQ(body_of(r), (json{{"status", "not_ready"}, {"reason", "draining"}}));

    backend_->set_readiness({true, ""});
    EXPECT_EQ(get("/readyz").result_int(), 200);
}

TEST_F(AdminServer, PassesAPatchToTheBackendWithTheFieldsGiven) {
    auto r = patch("/rooms/shop", R"({"queue_all": true})");
    ASSERT_EQ(r.result_int(), 200);
    EXPECT_EQ(body_of(r).at("queue_all"), true);
    r = patch("/rooms/launch", R"({"suspended": true, "queue_all": false})");
    ASSERT_EQ(r.result_int(), 200);
    EXPECT_EQ(body_of(r).at("status"), "suspended");

    auto calls = backend_->patches();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].id, "shop");
    EXPECT_EQ(calls[0].patch.queue_all, std::optional<bool>(true));
    EXPECT_EQ(calls[0].patch.suspended, std::nullopt);
    EXPECT_EQ(calls[1].id, "launch");
    EXPECT_EQ(calls[1].patch.queue_all, std::optional<bool>(false));
    EXPECT_EQ(calls[1].patch.suspended, std::optional<bool>(true));
    EXPECT_EQ(body_of(get("/rooms/launch/status")).at("suspended"), true);
}

TEST_F(AdminServer, RefusesInvalidPatchBodiesWith400NamingTheField) {
    struct probe {
        const char* body;
        json expected;
    };
    for (const auto& [body, expected] : {
             probe{"{not json", json{{"error", "request body is not valid JSON"}}},
             probe{"", json{{"error", "request body is not valid JSON"}}},
             probe{"[true]", json{{"error", "request body must be a JSON object"}}},
             probe{R"({"queue_all": "yes"})",
                   json{{"error", "queue_all must be true or false"}, {"field", "queue_all"}}},
             probe{R"({"suspended": 1})",
                   json{{"error", "suspended must be true or false"}, {"field", "suspended"}}},
             probe{R"({"queue_al": true})",
                   json{{"error", "unknown field; expected queue_all or suspended"},
                        {"field", "queue_al"}}},
             probe{"{}", json{{"error", "set queue_all or suspended"}}},
         }) {
        auto r = patch("/rooms/shop", body);
        EXPECT_EQ(r.result_int(), 400) << body;
        EXPECT_EQ(body_of(r), expected) << body;
    }
    EXPECT_TRUE(backend_->patches().empty());
}

TEST_F(AdminServer, AnswersAPatchTheBackendCouldNotApplyWith503) {
    backend_->fail_next_patch("state store unreachable");
    auto r = patch("/rooms/shop", R"({"suspended": true})");
    EXPECT_EQ(r.result_int(), 503);
    EXPECT_EQ(body_of(r), (json{{"error", "state store unreachable"}}));
}

TEST_F(AdminServer, PreviewPassesTheStateAndLanguageToTheBackendAndServesItsPage) {
    struct probe {
        const char* query;
        admin_preview_state state;
        const char* language;
    };
    for (const auto& [query, state, language] : {
             probe{"", admin_preview_state::queued, ""},
             probe{"?state=queued", admin_preview_state::queued, ""},
             probe{"?state=event&lang=de-DE", admin_preview_state::event, "de-DE"},
             probe{"?lang=ja&state=reject", admin_preview_state::reject, "ja"},
         }) {
        auto r = get(std::string("/rooms/shop/preview") + query);
        EXPECT_EQ(r.result_int(), 200) << query;
        EXPECT_EQ(r[http::field::content_type], "text/html; charset=utf-8") << query;
        EXPECT_EQ(r.body(),
                  "<p>shop " + std::to_string(static_cast<int>(state)) + " [" + language + "]</p>" +
                      test::fake_admin_backend::page_probe)
            << query;
        // The operator's page runs in a sandbox: no access to the admin origin, no calls out.
        const std::string csp(r["Content-Security-Policy"]);
        EXPECT_NE(csp.find("sandbox allow-scripts"), std::string::npos) << csp;
        EXPECT_EQ(csp.find("allow-same-origin"), std::string::npos) << csp;
        EXPECT_NE(csp.find("connect-src 'none'"), std::string::npos) << csp;
    }
    EXPECT_EQ(backend_->previews().size(), 4u);
}

TEST_F(AdminServer, PreviewRefusesBadQueryValuesWith400WithoutEchoingThem) {
    struct probe {
        const char* query;
        json expected;
    };
    const json bad_state{{"error", "state must be queued, event or reject"}, {"field", "state"}};
    const json bad_lang{{"error", "lang must be a language tag like de-DE"}, {"field", "lang"}};
    for (const auto& [query, expected] : {
             probe{"?state=waiting", bad_state},
             probe{"?state=", bad_state},
             probe{"?state", bad_state},
             probe{"?state=%3Cscript%3E", bad_state},
             probe{"?state=<script>alert(1)</script>", bad_state},
             probe{"?lang=", bad_lang},
             probe{"?lang=de_DE", bad_lang},
             probe{"?lang=\"><svg/onload=alert(1)>", bad_lang},
             probe{"?lang=de-", bad_lang},
             probe{"?lang=d3-DE", bad_lang},
             probe{"?lang=de-DEUTSCHLAND", bad_lang},
             probe{"?state=queued&state=event",
                   json{{"error", "state given more than once"}, {"field", "state"}}},
             probe{"?lang=de-DE&lang=fr-FR",
                   json{{"error", "lang given more than once"}, {"field", "lang"}}},
             probe{"?<b>=1", json{{"error", "unknown query parameter; expected state or lang"}}},
             probe{"?lang=xx-XX",
                   json{{"error", "lang must be one of en-US, de-DE"}, {"field", "lang"}}},
         }) {
        auto r = get(std::string("/rooms/shop/preview") + query);
        EXPECT_EQ(r.result_int(), 400) << query;
        EXPECT_EQ(r[http::field::content_type], "application/json") << query;
        EXPECT_EQ(body_of(r), expected) << query;
    }
    EXPECT_TRUE(backend_->previews().empty());
}

TEST_F(AdminServer, PreviewOfAnUnknownRoomIs404WhateverTheQuery) {
    for (const char* query : {"", "?state=queued", "?state=bogus", "?lang=xx-XX"}) {
        auto r = get(std::string("/rooms/nowhere/preview") + query);
        EXPECT_EQ(r.result_int(), 404) << query;
        EXPECT_EQ(body_of(r), (json{{"error", "no such room"}})) << query;
    }
    auto r = call(http::verb::post, "/rooms/shop/preview", std::string("Bearer ") + token);
    EXPECT_EQ(r.result_int(), 405);
    EXPECT_EQ(r[http::field::allow], "GET");
    EXPECT_TRUE(backend_->previews().empty());
}

TEST_F(AdminServer, RefusesABodyOver64KiBWith413) {
    std::string big = R"({"queue_all": true, "pad": ")" + std::string(70 * 1024, 'x') + "\"}";
    auto r = patch("/rooms/shop", big);
    EXPECT_EQ(r.result_int(), 413);
    EXPECT_TRUE(body_of(r).contains("error"));
    EXPECT_TRUE(backend_->patches().empty());
}

TEST_F(AdminServer, UsesTheTokenSetLastAndOpensWhenItIsCleared) {
    server_->set_token(std::string("other"));
    EXPECT_EQ(get("/rooms").result_int(), 403);
    EXPECT_EQ(get("/rooms", "Bearer other").result_int(), 200);
    server_->set_token(std::nullopt);
    EXPECT_EQ(get("/rooms", "").result_int(), 200);
    EXPECT_EQ(get("/rooms/shop/status", "").result_int(), 200);
}

// One GET with this Host header (none when `host` is null) and no token.
response get_with_host(std::uint16_t port, const char* host, std::string target = "/rooms") {
    test::test_client client(port);
    if (host == nullptr) {
        client.write_raw("GET " + target + " HTTP/1.0\r\n\r\n");
        return client.read();
    }
    request req{http::verb::get, target, 11};
    req.set(http::field::host, host);
    return client.send(std::move(req));
}

TEST_F(AdminServer, WithoutATokenRefusesAForeignHostWith421) {
    server_->set_token(std::nullopt);
    // A page whose name now points at 127.0.0.1 (DNS rebinding) makes the browser send its name.
    for (const char* host : {"evil.test", "evil.test:9090", "127.0.0.1.evil.test", "10.0.0.1",
                             "localhost.evil.test", "0.0.0.0:9090", "[::]", "", "a b"}) {
        for (const char* path : {"/rooms", "/healthz", "/", "/metrics"}) {
            auto r = get_with_host(port_, host, path);
            EXPECT_EQ(r.result_int(), 421) << "Host: " << host << " " << path;
        }
    }
    auto r = get_with_host(port_, "evil.test");
    EXPECT_TRUE(body_of(r).contains("error"));
    EXPECT_EQ(get_with_host(port_, nullptr).result_int(), 421) << "no Host at all";
    EXPECT_TRUE(backend_->patches().empty());
}

TEST_F(AdminServer, WithoutATokenAnswersLoopbackHostsAndConfiguredNames) {
    server_->set_token(std::nullopt, {"admin.internal"});
    const std::string port = std::to_string(port_);
    const std::vector<std::string> hosts{
        "127.0.0.1",     "127.0.0.1:" + port, "127.9.9.9",
        "localhost",     "LOCALHOST:" + port, "[::1]",
        "[::1]:" + port, "admin.internal",    "Admin.Internal:" + port};
    for (const auto& host : hosts) {
        EXPECT_EQ(get_with_host(port_, host.c_str()).result_int(), 200) << "Host: " << host;
    }
    EXPECT_EQ(get_with_host(port_, "other.internal").result_int(), 421);
}

TEST_F(AdminServer, WithATokenDoesNotJudgeTheHost) {
    test::test_client client(port_);
    request req{http::verb::get, "/rooms", 11};
    req.set(http::field::host, "admin.example.com");
    req.set(http::field::authorization, std::string("Bearer ") + token);
    EXPECT_EQ(client.send(std::move(req)).result_int(), 200);
    EXPECT_EQ(get_with_host(port_, "admin.example.com").result_int(), 401);
    EXPECT_EQ(get_with_host(port_, "admin.example.com", "/healthz").result_int(), 200);
}

TEST_F(AdminServer, ServesSeveralRequestsOnOneKeepAliveConnection) {
    test::test_client client(port_);
    for (int i = 0; i < 3; ++i) {
        request req{http::verb::get, "/rooms/shop/status", 11};
        req.set(http::field::authorization, std::string("Bearer ") + token);
        auto r = client.send(std::move(req));
        EXPECT_EQ(r.result_int(), 200);
        EXPECT_TRUE(r.keep_alive());
    }
}

TEST_F(AdminServer, AnswersAMalformedRequestWith400AndCloses) {
    test::test_client client(port_);
    client.write_raw("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n");
    auto r = client.read();
    EXPECT_EQ(r.result_int(), 400);
    EXPECT_TRUE(client.closed_by_server());
}


// ---- analytics --------------------------------------------------------------------------------

constexpr std::int64_t minute = 60'000;
// 2027-01-15T08:00:00Z, a minute boundary.
constexpr std::int64_t t0 = 1'800'000'000'000 - 1'800'000'000'000 % minute;

// Two minutes of a room, made by the real registry and history from known observations.
std::vector<metrics::minute_row> two_minutes() {
    metrics::metric_set ms(1);
    const auto& m = ms.room("shop");
    metrics::room_history h;
    h.record(t0, metrics::read_room(m));
    m.admitted.inc(0, 6);
    m.admitted_from_queue.inc(0, 4);
    m.admitted_out_of_order.inc(0, 1);
    for (double s : {30.0, 60.0, 90.0, 600.0}) {
        m.queue_wait.observe(0, s);
    }
    for (double s : {-20.0, 40.0, 50.0, 70.0}) {
        m.estimate_error.observe(0, s);
    }
    auto reading = metrics::read_room(m);
    reading.queued_users = 37;
    h.record(t0 + 30'000, reading);
    m.abandoned.inc(0, 3);
    m.revoked.inc(0, 2);
    m.flagged.inc(0, 1);
    h.record(t0 + minute + 5'000, metrics::read_room(m));
    return h.rows(0, t0 + 10 * minute);
}

std::vector<std::string> lines_of(const std::string& body) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < body.size()) {
        auto end = body.find("\r\n", at);
        EXPECT_NE(end, std::string::npos) << "every line ends in CRLF";
        if (end == std::string::npos) {
            break;
        }
        out.push_back(body.substr(at, end - at));
        at = end + 2;
    }
    return out;
}

TEST_F(AdminServer, AnalyticsCsvOfATimeRangeHasARowPerMinuteWithItsFigures) {
    backend_->set_now(t0 + 2 * minute);
    backend_->set_rows("shop", two_minutes());
    auto r = get("/rooms/shop/analytics.csv?from=2027-01-15T08:00Z&to=" +
                 std::to_string((t0 + 2 * minute) / 1000));
    ASSERT_EQ(r.result_int(), 200) << r.body();
    EXPECT_EQ(r[http::field::content_type], "text/csv; charset=utf-8");
    EXPECT_EQ(r["Content-Disposition"], "attachment; filename=\"shop-analytics.csv\"");
    const auto lines = lines_of(r.body());
    ASSERT_EQ(lines.size(), 3u) << r.body();
    EXPECT_EQ(lines[0],
              "room,minute_start,admitted,admitted_from_queue,admitted_out_of_order,queued,"
              "abandoned,revoked,flagged,queue_wait_p50_seconds,queue_wait_p90_seconds,"
              "estimates_compared,estimate_error_median_seconds,estimate_error_bias_seconds,"
              "session_p50_seconds,active_users,queued_users");
    // p50 of 30, 60, 90, 600 s interpolated in (30, 60]: 60; p90 in (450, 600]: 540. The
    // errors −20, 40, 50, 70 s: median 45 (in (30, 60]), bias (mean) 35.
    EXPECT_EQ(lines[1], "\"shop\",2027-01-15T08:00:00Z,6,4,1,0,0,0,0,60.0,540.0,4,45.0,35.0,,0,37");
    EXPECT_EQ(lines[2], "\"shop\",2027-01-15T08:01:00Z,0,0,0,0,3,2,1,,,0,,,,0,0");
    const auto calls = backend_->analytics_calls();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].from_ms, t0);
    EXPECT_EQ(calls[0].to_ms, t0 + 2 * minute);
}

TEST_F(AdminServer, AnalyticsCsvOfAnEventCoversItsSpanAndNoTimesGiveTheLastDay) {
    backend_->set_now(t0 + 2 * minute + 1'000);
    backend_->set_rows("shop", two_minutes());
    backend_->add_event("shop", "spring sale", {t0 + minute, t0 + 90 * minute});
    auto r = get("/rooms/shop/analytics.csv?event=spring%20sale");
    ASSERT_EQ(r.result_int(), 200) << r.body();
    EXPECT_EQ(lines_of(r.body()).size(), 2u) << "the header and the event's one minute kept";
    r = get("/rooms/shop/analytics.csv");
    ASSERT_EQ(r.result_int(), 200) << r.body();
    EXPECT_EQ(lines_of(r.body()).size(), 3u);
    const auto calls = backend_->analytics_calls();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].from_ms, t0 + minute);
    EXPECT_EQ(calls[0].to_ms, t0 + 90 * minute);
    EXPECT_EQ(calls[1].to_ms, t0 + 3 * minute) << "the minute under way is included";
    EXPECT_EQ(calls[1].to_ms - calls[1].from_ms, 24 * 60 * minute);
}

TEST_F(AdminServer, AnalyticsCsvRefusesHostileQueriesWith400) {
    backend_->add_event("shop", "launch", {t0, t0 + minute});
    const std::string bad_from =
        "from must be unix seconds or an ISO 8601 UTC time like 2026-11-26T07:00:00Z, from 1970 "
        "to 9999";
    struct probe {
        std::string query;
        std::string error;
    };
    for (const auto& [query, error] : std::vector<probe>{
             {"?from=-5", bad_from},
             {"?from=99999999999999", bad_from},
             {"?from=1e9", bad_from},
             {"?from=", bad_from},
             {"?from=2026-13-01T00:00Z", bad_from},
             {"?from=2026-02-30T00:00Z", bad_from},
             {"?from=1969-12-31T23:59Z", bad_from},
             {"?from=2026-01-01T24:00Z", bad_from},
             {"?from=2026-01-01T00:00", bad_from},
             {"?from=%3Cscript%3E", bad_from},
             {"?from=1800000000&to=1700000000", "from must be before to"},
             {"?from=1800000000&to=1800000000", "from must be before to"},
             {"?from=0&to=99999999999",
              "the range is longer than 31 days; the rows of the last day are kept"},
             {"?from=1&from=2", "from given more than once"},
             {"?event=launch&from=1", "give either event or from and to, not both"},
             {"?event=nope", "event must name one of the room's events"},
             {"?event=", "event must name one of the room's events"},
             {"?limit=5", "unknown query parameter; expected from and to, or event"},
             {"?from=%zz", "bad percent escape in the query"},
             {"?from=%4", "bad percent escape in the query"},
             {"?from=" + std::string(2000, '1'), "query longer than 1024 bytes"},
         }) {
        auto r = get("/rooms/shop/analytics.csv" + query);
        EXPECT_EQ(r.result_int(), 400) << query;
        EXPECT_EQ(body_of(r).value("error", ""), error) << query;
    }
    EXPECT_TRUE(backend_->analytics_calls().empty()) << "nothing reached the backend";
    auto r = get("/rooms/nowhere/analytics.csv?from=-5");
    EXPECT_EQ(r.result_int(), 404) << "the path is judged first";
    r = call(http::verb::post, "/rooms/shop/analytics.csv", std::string("Bearer ") + token);
    EXPECT_EQ(r.result_int(), 405);
    r = get("/rooms/shop/analytics.csv", "");
    EXPECT_EQ(r.result_int(), 401) << "behind the admin token like every endpoint";
}

TEST_F(AdminServer, AnalyticsJsonSummarisesTheMinutesAskedFor) {
    backend_->set_now(t0 + 2 * minute);
    backend_->set_rows("shop", two_minutes());
    auto r = get("/rooms/shop/analytics?minutes=30");
    ASSERT_EQ(r.result_int(), 200) << r.body();
    auto b = body_of(r);
    EXPECT_EQ(b["room"], "shop");
    EXPECT_EQ(b["minutes"], 30);
    ASSERT_EQ(b["rows"].size(), 2u);
    EXPECT_EQ(b["rows"][0]["minute"], t0);
    EXPECT_EQ(b["rows"][1]["abandoned"], 3);
    const auto& s = b["summary"];
    EXPECT_EQ(s["queue_wait_p50_seconds"], 60.0);
    EXPECT_EQ(s["queue_wait_p90_seconds"], 540.0);
    EXPECT_EQ(s["estimate_error_median_seconds"], 45.0);
    EXPECT_EQ(s["estimate_error_bias_seconds"], 35.0);
    EXPECT_EQ(s["estimates_compared"], 4);
    EXPECT_EQ(s["out_of_order_share"], 0.25) << "1 of the 4 admitted from the queue";
    EXPECT_EQ(s["abandoned"], 3);
    EXPECT_EQ(s["revoked"], 2);
    EXPECT_EQ(s["flagged"], 1);
    EXPECT_TRUE(s["session_p50_seconds"].is_null()) << "no session ended";
    for (const char* query : {"?minutes=0", "?minutes=1441", "?minutes=-1", "?minutes=abc",
                              "?minutes=99999999999999999999", "?minutes=5&minutes=6", "?x=1"}) {
        EXPECT_EQ(get(std::string("/rooms/shop/analytics") + query).result_int(), 400) << query;
    }
    EXPECT_EQ(get("/rooms/nowhere/analytics").result_int(), 404);
}

}  // namespace
}  // namespace waitroom::admin
