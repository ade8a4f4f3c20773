// The Prometheus registry: exact text exposition, values summed over writer slots.
#include "waitroom/metrics/metrics.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace waitroom::metrics {
namespace {

TEST(MetricsRegistry, WritesCountersAndGaugesSummedOverSlots) {
    registry r(3);
    r.declare("waitroom_things_total", "Things done.", kind::counter, {"room"});
    r.declare("waitroom_open", "Open things.", kind::gauge);
    auto a = r.add_counter("waitroom_things_total", {"a"});
    auto b = r.add_counter("waitroom_things_total", {"b"});
    auto open = r.add_gauge("waitroom_open");
    a.inc(0);
    a.inc(2, 4);
    b.inc(1);
    open.add(0, 3);
    open.sub(1, 1);

    EXPECT_EQ(r.text(),
              "# HELP waitroom_things_total Things done.\n"
              "# TYPE waitroom_things_total counter\n"
              "waitroom_things_total{room=\"a\"} 5\n"
              "waitroom_things_total{room=\"b\"} 1\n"
              "# HELP waitroom_open Open things.\n"
              "# TYPE waitroom_open gauge\n"
              "waitroom_open 2\n");
}

TEST(MetricsRegistry, WritesHistogramBucketsCumulativelyWithSumAndCount) {
    registry r(2);
    r.declare("waitroom_wait_seconds", "Waits.", kind::histogram, {"room"}, {0.1, 1});
    auto h = r.add_histogram("waitroom_wait_seconds", {"shop"});
    h.observe(0, 0.05);
    h.observe(1, 0.5);
    h.observe(1, 2);
    h.observe(0, 0.1);  // on a bound: counts in that bucket (le = less or equal)

    EXPECT_EQ(r.text(),
              "# HELP waitroom_wait_seconds Waits.\n"
              "# TYPE waitroom_wait_seconds histogram\n"
              "waitroom_wait_seconds_bucket{room=\"shop\",le=\"0.1\"} 2\n"
              "waitroom_wait_seconds_bucket{room=\"shop\",le=\"1\"} 3\n"
              "waitroom_wait_seconds_bucket{room=\"shop\",le=\"+Inf\"} 4\n"
              "waitroom_wait_seconds_sum{room=\"shop\"} 2.65\n"
              "waitroom_wait_seconds_count{room=\"shop\"} 4\n");
}

TEST(MetricsRegistry, EscapesLabelValuesAndHelpText) {
    registry r(1);
    r.declare("waitroom_x_total", "Back\\slash\nnew line.", kind::counter, {"room"});
    r.add_counter("waitroom_x_total", {"a\"b\\c\nd"}).inc(0);
    EXPECT_EQ(r.text(),
              "# HELP waitroom_x_total Back\\\\slash\\nnew line.\n"
              "# TYPE waitroom_x_total counter\n"
              "waitroom_x_total{room=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(MetricsRegistry, ReturnsTheSameSeriesForTheSameLabels) {
    registry r(1);
    r.declare("waitroom_x_total", "X.", kind::counter, {"room"});
    r.add_counter("waitroom_x_total", {"a"}).inc(0);
    r.add_counter("waitroom_x_total", {"a"}).inc(0);
    EXPECT_NE(r.text().find("waitroom_x_total{room=\"a\"} 2\n"), std::string::npos);
}

TEST(MetricsRegistry, OmitsFamiliesWithoutSeries) {
    registry r(1);
    r.declare("waitroom_x_total", "X.", kind::counter, {"room"});
    EXPECT_EQ(r.text(), "");
}

TEST(MetricsRegistry, RefusesBadNamesAndMismatchedDeclarations) {
    registry r(1);
    EXPECT_THROW(r.declare("9bad", "x", kind::counter), std::invalid_argument);
    EXPECT_THROW(r.declare("ok", "x", kind::counter, {"bad-label"}), std::invalid_argument);
    EXPECT_THROW(r.declare("h", "x", kind::histogram, {"le"}, {1}), std::invalid_argument);
    EXPECT_THROW(r.declare("h", "x", kind::histogram, {}, {1, 0.5}), std::invalid_argument);
    r.declare("waitroom_x_total", "X.", kind::counter, {"room"});
    EXPECT_THROW(r.declare("waitroom_x_total", "X.", kind::gauge, {"room"}), std::invalid_argument);
    EXPECT_THROW(r.add_gauge("waitroom_x_total", {"a"}), std::invalid_argument);
    EXPECT_THROW(r.add_counter("waitroom_x_total"), std::invalid_argument);
    EXPECT_THROW(r.add_counter("waitroom_undeclared_total"), std::invalid_argument);
}

TEST(MetricsRegistry, KeepsHandlesValidWhileManySeriesAreAdded) {
    registry r(2);
    r.declare("waitroom_x_total", "X.", kind::counter, {"room"});
    auto first = r.add_counter("waitroom_x_total", {"r0"});
    first.inc(1, 7);
    for (int i = 1; i < 1000; ++i) {  // several storage chunks
        r.add_counter("waitroom_x_total", {"r" + std::to_string(i)}).inc(0, i);
    }
    first.inc(0);
    auto text = r.text();
    EXPECT_NE(text.find("waitroom_x_total{room=\"r0\"} 8\n"), std::string::npos);
    EXPECT_NE(text.find("waitroom_x_total{room=\"r999\"} 999\n"), std::string::npos);
}

TEST(MetricsRegistry, CountsEveryIncrementFromConcurrentWorkers) {
    constexpr unsigned workers = 4;
    registry r(workers);
    r.declare("waitroom_x_total", "X.", kind::counter);
    auto c = r.add_counter("waitroom_x_total");
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers; ++w) {
        threads.emplace_back([c, w] {
            for (int i = 0; i < 10000; ++i) {
                c.inc(w);
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(r.text(),
              "# HELP waitroom_x_total X.\n# TYPE waitroom_x_total counter\n"
              "waitroom_x_total 40000\n");
}

TEST(MetricSet, ExposesRoomAndProxyMetricsUnderPrometheusNames) {
    metric_set m(2);
    const auto& shop = m.room("shop");
    EXPECT_EQ(&shop, &m.room("shop"));
    shop.admitted.inc(0);
    shop.admitted.inc(1);
    shop.queued.inc(1, 3);
    shop.active_users.set(0, 42);
    m.requests(status_class_of(204)).inc(0);
    m.requests(status_class_of(503)).inc(1);
    m.origin_errors(origin_error::timeout).inc(0);
    m.origin_reused().inc(1);
    m.store_degraded().set(0, 1);
    m.request_latency().observe(0, 0.003);

    auto text = m.text();
    for (const char* line : {
             "waitroom_room_admitted_total{room=\"shop\"} 2\n",
             "waitroom_room_queued_total{room=\"shop\"} 3\n",
             "waitroom_room_active_users{room=\"shop\"} 42\n",
             "waitroom_room_rejected_total{room=\"shop\"} 0\n",
             "waitroom_http_requests_total{code=\"2xx\"} 1\n",
             "waitroom_http_requests_total{code=\"5xx\"} 1\n",
             "waitroom_http_requests_total{code=\"4xx\"} 0\n",
             "waitroom_origin_errors_total{kind=\"timeout\"} 1\n",
             "waitroom_origin_requests_total{connection=\"reused\"} 1\n",
             "waitroom_store_degraded 1\n",
             "waitroom_http_request_duration_seconds_bucket{le=\"0.0025\"} 0\n",
             "waitroom_http_request_duration_seconds_bucket{le=\"0.005\"} 1\n",
             "waitroom_http_request_duration_seconds_count 1\n",
             "# TYPE waitroom_store_sync_duration_seconds histogram\n",
         }) {
        EXPECT_NE(text.find(line), std::string::npos) << line;
    }
}

TEST(MetricSet, ClassifiesStatusCodes) {
    EXPECT_EQ(status_class_of(101), status_class::informational);
    EXPECT_EQ(status_class_of(200), status_class::success);
    EXPECT_EQ(status_class_of(302), status_class::redirect);
    EXPECT_EQ(status_class_of(429), status_class::client_error);
    EXPECT_EQ(status_class_of(502), status_class::server_error);
}

}  // namespace
}  // namespace waitroom::metrics
