// The analytics figures read from histograms (quantiles, mean, signed errors) and the per-minute
// rows of a room: made from readings, bounded, written as CSV.
#include "waitroom/metrics/room_history.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace waitroom::metrics {
namespace {

constexpr std::int64_t minute = 60'000;
constexpr std::int64_t t0 = 1'800'000'000'000;  // 2027-01-15T08:00:00Z

TEST(HistogramFigures, MedianAndBiasOfAKnownSequenceOfSignedErrors) {
    registry r(2);
    r.declare("waitroom_err_seconds", "Errors.", kind::histogram, {}, {-60, -15, 0, 15, 60});
    auto h = r.add_histogram("waitroom_err_seconds");
    // Errors −40, −10, 5, 10, 30 s on two slots: bias (mean) −1, median interpolated in (0, 15].
    h.observe(0, -40);
    h.observe(1, -10);
    h.observe(0, 5);
    h.observe(1, 10);
    h.observe(0, 30);
    auto reading = h.read();
    EXPECT_EQ(reading.count(), 5);
    EXPECT_DOUBLE_EQ(reading.sum, -5);
    EXPECT_DOUBLE_EQ(mean(reading), -1);
    // Rank 2.5 of 5: 2 at or below 0, the bucket (0, 15] holds 2 → 0 + 15 × 0.5 / 2.
    EXPECT_DOUBLE_EQ(quantile(reading, 0.5), 3.75);
    // The lowest bucket of a signed histogram is its bound; +Inf is the highest bound.
    h.observe(0, -500);
    h.observe(0, 500);
    h.observe(0, 500);
    reading = h.read();
    EXPECT_DOUBLE_EQ(quantile(reading, 0), -60);
    EXPECT_DOUBLE_EQ(quantile(reading, 1), 60);
    // −5 − 500 + 500 + 500: the sum runs both ways.
    EXPECT_NE(r.text().find("waitroom_err_seconds_sum 495\n"), std::string::npos) << r.text();
    EXPECT_NE(r.text().find("le=\"-60\"} 1\n"), std::string::npos) << r.text();
}

TEST(HistogramFigures, NothingObservedHasNoFigures) {
    histogram_reading none;
    EXPECT_TRUE(std::isnan(quantile(none, 0.5)));
    EXPECT_TRUE(std::isnan(mean(none)));
    none.bounds = std::make_shared<const std::vector<double>>(std::vector<double>{1, 2});
    none.buckets = {0, 0, 0};
    EXPECT_TRUE(std::isnan(quantile(none, 0.5)));
    EXPECT_TRUE(std::isnan(quantile(none, 2)));
}

TEST(RoomHistory, EachMinuteHoldsWhatChangedInIt) {
    metric_set ms(1);
    const auto& m = ms.room("shop");
    room_history h;
    m.admitted.inc(0, 100);  // before the first reading: the baseline, in no row
    h.record(t0 + 1'000, read_room(m));
    m.admitted.inc(0, 2);
    m.queue_wait.observe(0, 45);
    h.record(t0 + 30'000, read_room(m));
    m.admitted.inc(0, 3);
    m.queue_wait.observe(0, 400);
    h.record(t0 + minute + 1'000, read_room(m));
    m.admitted.inc(0, 1);
    h.record(t0 + minute + 2'000, read_room(m));
    auto rows = h.rows(0, t0 + 5 * minute);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].minute_ms, t0);
    EXPECT_EQ(rows[0].admitted, 2);
    EXPECT_EQ(rows[0].queue_wait.count(), 1);
    EXPECT_EQ(rows[1].admitted, 4);
    EXPECT_EQ(rows[1].queue_wait.count(), 1);
    EXPECT_DOUBLE_EQ(rows[1].queue_wait.sum, 400);
    EXPECT_EQ(combine(rows).admitted, 6);
    EXPECT_EQ(h.rows(t0 + minute, t0 + 2 * minute).size(), 1u);
    EXPECT_TRUE(h.rows(t0 + 2 * minute, t0 + 1).empty());
}

TEST(RoomHistory, KeepsAtMostItsRowsWhateverTheTraffic) {
    metric_set ms(1);
    const auto& m = ms.room("shop");
    room_history h(1440);
    for (std::int64_t i = 0; i < 3 * 1440; ++i) {
        m.admitted.inc(0, 1000);
        m.queue_wait.observe(0, 30);
        h.record(t0 + i * minute, read_room(m));
    }
    EXPECT_EQ(h.size(), 1440u);
    auto rows = h.rows(0, t0 + 10'000 * minute);
    ASSERT_EQ(rows.size(), 1440u);
    EXPECT_EQ(rows.front().minute_ms, t0 + (3 * 1440 - 1440) * minute);
    EXPECT_EQ(rows.back().admitted, 1000);
    // A clock that goes back starts over from a new baseline: no row is counted twice.
    h.record(t0, read_room(m));
    m.admitted.inc(0, 7);
    h.record(t0 + 3 * 1440 * minute, read_room(m));
    EXPECT_EQ(h.rows(t0 + 3 * 1440 * minute, t0 + 3 * 1440 * minute + minute).at(0).admitted, 7);
}

TEST(RoomHistory, CsvQuotesTheRoomAndDefusesFormulas) {
    minute_row r;
    r.minute_ms = t0;
    r.admitted = 3;
    const std::string csv = to_csv("=HYPERLINK(\"x\")", {r});
    EXPECT_NE(csv.find("\r\n\"'=HYPERLINK(\"\"x\"\")\",2027-01-15T08:00:00Z,3,"),
              std::string::npos)
        << csv;
}

}  // namespace
}  // namespace waitroom::metrics
