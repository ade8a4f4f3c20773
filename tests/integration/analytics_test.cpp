// The room's analytics of a running waitroomd: visitors queued and admitted through the real
// daemon, then the new metrics (time in queue, estimate error, admissions from the queue,
// abandonments) and the CSV download read back through the admin listener.

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <thread>

#include "daemon_fixture.hpp"

namespace waitroom::test {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

constexpr std::string_view token = "analytics-token";

// The sum of one column of a CSV body (header line first, comma-separated, no commas inside
// the fields but the quoted room id, which has none).
std::int64_t column_sum(const std::string& csv, const std::string& column) {
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);
    std::size_t index = 0;
    {
        std::istringstream head(line);
        std::string name;
        bool found = false;
        while (std::getline(head, name, ',')) {
            if (name == column || name == column + "\r") {
                found = true;
                break;
            }
            ++index;
        }
        if (!found) {
            ADD_FAILURE() << "no column " << column << " in " << line;
            return 0;
        }
    }
    std::int64_t sum = 0;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string f;
        for (std::size_t i = 0; i <= index && std::getline(fields, f, ','); ++i) {
        }
        if (!f.empty() && f != "\r") {
            sum += std::stoll(f);
        }
    }
    return sum;
}

class Analytics : public daemon_test {
  protected:
    http_response admin(const std::string& target) {
        client_connection c(admin_port_);
        http::request<http::string_body> req{http::verb::get, target, 11};
        req.set(http::field::authorization, "Bearer " + std::string(token));
        return c.request(std::move(req));
    }
    std::string scrape() { return admin("/metrics").body; }

    std::uint16_t admin_port_ = 0;
};

// Product time runs 20 times faster: a 1-minute session ends in about 3.5 s, a queued visitor's
// window (refresh_interval 60 s) lapses about 3.25 s after its last refresh, so that a loaded
// machine stalling the waiting visitor's refreshes does not make it a second abandonment; a
// minute row is 3 s.
TEST_F(Analytics, QueuedAndAdmittedVisitorsShowInTheMetricsAndTheCsv) {
    const std::string token_file = dir_.write("admin.token", std::string(token) + "\n");
    std::ostringstream extra;
    extra << "admin: {listen: \"127.0.0.1:0\", token_file: \"" << token_file << "\"}\n"
          << "state: {backend: local, sync_interval: 50ms}\n"
          << "testing: {time_scale: 20}\n"
          << "rooms:\n  - {id: shop, name: Shop, host: shop.test, total_active_users: 1, "
          << "new_users_per_minute: 100, session_duration: 1m, refresh_interval: 60s}\n";
    start(proxy_config(origin_.url(), extra.str()));
    ASSERT_NE(port_, 0);
    admin_port_ = announced_admin_port();
    ASSERT_NE(admin_port_, 0);

    cookie_jar inside, gone, waiting;
    ASSERT_TRUE(from_origin(inside.get(port_, "/hello")));
    // Two queued visitors: one leaves after its first refresh, which counted it (an
    // abandonment), one keeps refreshing.
    ASSERT_TRUE(is_queue_page(gone.get(port_, "/hello")));
    ASSERT_TRUE(is_queue_page(gone.get(port_, "/hello")));
    ASSERT_TRUE(is_queue_page(waiting.get(port_, "/hello")));
    // The visitor inside leaves: its session ends and the waiting one is let in.
    bool admitted = false;
    ASSERT_TRUE(poll_until(30s, [&] {
        auto r = waiting.get(port_, "/hello");
        admitted = from_origin(r);
        return admitted;
    })) << output();

    const std::string room = R"({room="shop"})";
    std::string m;
    ASSERT_TRUE(poll_until(20s, [&] {
        m = scrape();
        return metric(m, "waitroom_room_abandoned_total" + room) >= 1;
    })) << m;
    EXPECT_EQ(metric(m, "waitroom_room_admitted_from_queue_total" + room), 1) << m;
    EXPECT_EQ(metric(m, "waitroom_room_queue_wait_seconds_count" + room), 1) << m;
    // It waited about a session (60 s of product time, give or take a couple of windows).
    EXPECT_GT(metric(m, "waitroom_room_queue_wait_seconds_sum" + room), 30) << m;
    EXPECT_LT(metric(m, "waitroom_room_queue_wait_seconds_sum" + room), 400) << m;
    EXPECT_EQ(metric(m, "waitroom_room_wait_estimate_error_seconds_count" + room), 1) << m;
    EXPECT_NE(m.find("# TYPE waitroom_room_wait_estimate_error_seconds histogram"),
              std::string::npos);
    EXPECT_NE(m.find("waitroom_room_wait_estimate_error_seconds_bucket{room=\"shop\",le=\"-60\"}"),
              std::string::npos);
    EXPECT_EQ(metric(m, "waitroom_room_abandoned_total" + room), 1) << "only one stopped: " << m;
    EXPECT_EQ(metric(m, "waitroom_room_session_duration_seconds_count" + room), 0)
        << "the session that ended was never seen again";

    // The same figures by the minute, after the next syncs recorded them.
    std::string csv;
    ASSERT_TRUE(poll_until(10s, [&] {
        auto r = admin("/rooms/shop/analytics.csv");
        csv = r.body;
        return r.status == 200 && column_sum(csv, "admitted_from_queue") == 1 &&
               column_sum(csv, "abandoned") == 1;
    })) << csv;
    EXPECT_EQ(column_sum(csv, "estimates_compared"), 1) << csv;
    EXPECT_GE(column_sum(csv, "admitted"), 2) << csv;
    auto j = admin("/rooms/shop/analytics?minutes=1440");
    ASSERT_EQ(j.status, 200u) << j.body;
    auto body = json::parse(j.body);
    EXPECT_EQ(body["summary"]["admitted_from_queue"], 1) << j.body;
    EXPECT_TRUE(body["summary"]["queue_wait_p50_seconds"].is_number()) << j.body;
    EXPECT_TRUE(body["summary"]["estimate_error_median_seconds"].is_number()) << j.body;

    auto bad = admin("/rooms/shop/analytics.csv?from=-1");
    EXPECT_EQ(bad.status, 400u) << bad.body;
    bad = admin("/rooms/shop/analytics.csv?from=0&to=9999999999");
    EXPECT_EQ(bad.status, 400u) << bad.body;
}

}  // namespace
}  // namespace waitroom::test
