// The figures of an admission from the queue (room/analytics.hpp): time in queue, the error of
// the first estimate shown, and overtaking, against known sequences; and the engine carrying the
// first estimate in the cookie from the first queue page to the admission.

#include <gtest/gtest.h>

#include <limits>

#include "room/harness.hpp"
#include "waitroom/room/analytics.hpp"

namespace waitroom::room {
namespace {

using namespace std::chrono_literals;
using room_testing::harness;
using room_testing::make_room;
using room_testing::visitor;

constexpr std::int64_t W = 10'000;
constexpr std::int64_t t0 = 1'800'000'000'000;

room_state state_with(std::vector<std::pair<std::int64_t, std::int64_t>> waiting) {
    room_counts c;
    c.as_of_ms = t0;
    c.waiting = std::move(waiting);
    room_limits l;
    l.total_active_users = 10;
    l.new_users_per_minute = 10;
    return room_state(c, l);
}

payload queued(std::int64_t bucket, std::int64_t shown_at = 0, std::uint32_t estimate_s = 0) {
    payload p;
    p.room = "shop";
    p.bucket = bucket;
    p.last_check_in = t0;
    p.estimate_shown_at = shown_at;
    p.estimate_seconds = estimate_s;
    return p;
}

TEST(Analytics, MeasuresTheWaitFromTheFirstEstimateAndItsErrorBothWays) {
    const auto st = state_with({{t0 - 10 * W, 2}});
    // Shown 5 min before the admission, the estimate said 4: a minute longer than told.
    auto a = assess_admission(queued(t0 - 10 * W, t0 - 300'000, 240), st, t0);
    EXPECT_TRUE(a.from_queue);
    EXPECT_EQ(a.waited_ms, 300'000);
    ASSERT_TRUE(a.estimated);
    EXPECT_EQ(a.estimate_ms, 240'000);
    EXPECT_EQ(a.error_ms, 60'000);
    // The same wait, told 7 minutes: two minutes shorter than told.
    a = assess_admission(queued(t0 - 10 * W, t0 - 300'000, 420), st, t0);
    EXPECT_EQ(a.error_ms, -120'000);
    // A known sequence of (waited, told): errors +60, −120, 0, +30, +15 s.
    const std::vector<std::pair<std::int64_t, std::uint32_t>> seq{
        {300'000, 240}, {300'000, 420}, {60'000, 60}, {90'000, 60}, {75'000, 60}};
    std::vector<std::int64_t> errors;
    for (const auto& [waited, told] : seq) {
        errors.push_back(assess_admission(queued(t0 - W, t0 - waited, told), st, t0).error_ms);
    }
    EXPECT_EQ(errors, (std::vector<std::int64_t>{60'000, -120'000, 0, 30'000, 15'000}));
}

TEST(Analytics, ACookieWithoutTheEstimateIsMeasuredFromItsArrivalWindowAndComparesNothing) {
    const auto st = state_with({});
    auto a = assess_admission(queued(t0 - 7 * W), st, t0 + 1'234);
    EXPECT_TRUE(a.from_queue);
    EXPECT_EQ(a.waited_ms, 7 * W + 1'234);
    EXPECT_FALSE(a.estimated);
    EXPECT_EQ(a.error_ms, 0);
}

TEST(Analytics, AbsurdEstimatesAndTimesAreLeftOutNeverOverflowed) {
    const auto st = state_with({});
    const auto max64 = std::numeric_limits<std::int64_t>::max();
    const auto min64 = std::numeric_limits<std::int64_t>::min();
    // An estimate of 136 years: the wait is measured, the estimate is not believed.
    auto a = assess_admission(queued(t0 - W, t0 - 60'000, 0xFFFF'FFFFu), st, t0);
    EXPECT_EQ(a.waited_ms, 60'000);
    EXPECT_FALSE(a.estimated);
    // Shown in the future, or at the far ends of time: the arrival window stands in.
    for (std::int64_t shown : {t0 + 5'000, max64, min64, std::int64_t{1}}) {
        a = assess_admission(queued(t0 - 2 * W, shown, 60), st, t0);
        EXPECT_FALSE(a.estimated) << shown;
        EXPECT_EQ(a.waited_ms, 2 * W) << shown;
    }
    // An arrival window at the far ends of time: a wait of 0 or of the most believed.
    EXPECT_EQ(assess_admission(queued(min64), st, t0).waited_ms, 0);
    EXPECT_EQ(assess_admission(queued(max64), st, t0).waited_ms, 0);
    EXPECT_EQ(assess_admission(queued(-t0), st, t0).waited_ms, max_believed_wait_ms);
}

TEST(Analytics, AnAdmissionOvertakesWhenAnOlderArrivalWindowIsStillWaiting) {
    // Windows: 3 visitors of t0 − 3W, 2 of t0 − 2W, 4 of t0 − W still waiting.
    const auto st = state_with({{t0 - 3 * W, 3}, {t0 - 2 * W, 2}, {t0 - W, 4}});
    // A known sequence of admissions by arrival window, with the overtakes expected.
    const std::vector<std::pair<std::int64_t, bool>> seq{
        {t0 - 3 * W, false}, {t0 - 2 * W, true}, {t0 - W, true}, {t0 - 3 * W, false}};
    int overtakes = 0;
    for (const auto& [bucket, expected] : seq) {
        const auto a = assess_admission(queued(bucket), st, t0);
        EXPECT_EQ(a.overtook, expected) << bucket;
        overtakes += a.overtook ? 1 : 0;
    }
    EXPECT_EQ(overtakes, 2);  // the share admitted out of order: 2 of 4
    // Nobody older waiting: a room admitting its queue in order overtakes no one.
    EXPECT_FALSE(assess_admission(queued(t0 - W), state_with({{t0 - W, 4}}), t0).overtook);
    EXPECT_FALSE(assess_admission(queued(t0 - W), state_with({}), t0).overtook);
}

// The engine: the first estimate shown is sealed in the cookie, kept over later refreshes, and
// compared with the actual wait at the admission.
TEST(Analytics, TheEngineKeepsTheFirstEstimateUntilTheAdmissionAndComparesIt) {
    harness h({make_room("shop", 1, 100)});
    visitor inside;
    ASSERT_EQ(h.visit(inside).what, action::admit);
    h.sync();
    h.advance(10s);
    visitor me;
    auto d = h.visit(me);
    ASSERT_EQ(d.what, action::queue);
    ASSERT_TRUE(d.page.wait_time_known);
    const std::int64_t shown_at = h.now();
    ASSERT_TRUE(me.cookie);
    EXPECT_EQ(me.cookie->estimate_shown_at, shown_at);
    // What the visitor was told at its finest: waitTimeSeconds, not waitTime's whole minutes.
    EXPECT_EQ(me.cookie->estimate_seconds, static_cast<std::uint32_t>(d.page.wait_time_seconds));
    const std::uint32_t told = me.cookie->estimate_seconds;
    // Later refreshes show their own estimates, the cookie keeps the first.
    for (int i = 0; i < 3; ++i) {
        h.sync();
        h.advance(std::chrono::seconds{d.refresh_seconds});
        d = h.visit(me);
        ASSERT_EQ(d.what, action::queue);
        EXPECT_EQ(me.cookie->estimate_shown_at, shown_at);
        EXPECT_EQ(me.cookie->estimate_seconds, told);
        EXPECT_FALSE(d.admission.from_queue);
    }
    // The place inside frees: the next refresh admits, measured from the first estimate.
    h.revoke(inside);
    h.sync();
    h.advance(std::chrono::seconds{d.refresh_seconds});
    d = h.visit(me);
    ASSERT_EQ(d.what, action::admit);
    ASSERT_TRUE(d.admission.from_queue);
    EXPECT_EQ(d.admission.waited_ms, h.now() - shown_at);
    ASSERT_TRUE(d.admission.estimated);
    EXPECT_EQ(d.admission.error_ms, h.now() - shown_at - std::int64_t{told} * 1000);
    EXPECT_FALSE(d.admission.overtook);
    EXPECT_EQ(me.cookie->estimate_shown_at, 0) << "an admitted cookie carries no estimate";
    // A new visitor admitted at once did not come from the queue.
    harness empty({make_room("docs", 10, 100)});
    visitor walk_in;
    d = empty.visit(walk_in);
    ASSERT_EQ(d.what, action::admit);
    EXPECT_FALSE(d.admission.from_queue);
}

// A visitor who stopped refreshing is still counted in its window for a while: a later arrival
// admitted meanwhile goes in before it, and the figure says so.
TEST(Analytics, TheEngineReportsALaterArrivalAdmittedBeforeAnOlderOneStillCounted) {
    harness h({make_room("shop", 2, 100)});
    visitor a, b;
    ASSERT_EQ(h.visit(a).what, action::admit);
    ASSERT_EQ(h.visit(b).what, action::admit);
    h.advance(10s);
    visitor older;
    ASSERT_EQ(h.visit(older).what, action::queue);
    h.advance(10s);
    visitor later;
    auto d = h.visit(later);
    ASSERT_EQ(d.what, action::queue);
    ASSERT_LT(older.cookie->bucket, later.cookie->bucket);
    h.revoke(a);
    h.revoke(b);
    h.sync();
    h.advance(std::chrono::seconds{d.refresh_seconds});
    d = h.visit(later);
    ASSERT_EQ(d.what, action::admit);
    EXPECT_TRUE(d.admission.overtook) << "the older visitor is still counted as waiting";
    h.sync();
    d = h.visit(older);
    ASSERT_EQ(d.what, action::admit);
    EXPECT_FALSE(d.admission.overtook);
}

TEST(Analytics, AnExpiredSessionReportsHowLongItLasted) {
    auto r = make_room("shop", 10, 100);
    r.session_duration = 1min;
    harness h({r});
    visitor v;
    ASSERT_EQ(h.visit(v).what, action::admit);
    const std::int64_t admitted_at = h.now();
    h.advance(30s);
    ASSERT_EQ(h.visit(v).what, action::admit);  // renewed: counted in a later window
    // Admitted visitors are counted in windows of a sixtieth of the session (1 s here).
    constexpr std::int64_t active_window = 1'000;
    const std::int64_t last_window = h.now() - h.now() % active_window;
    h.advance(10min);
    auto d = h.visit(v);
    // Its session ended one window and a session after the window of its last check-in.
    EXPECT_EQ(d.ended_session_ms, last_window + active_window + 60'000 - admitted_at);
    EXPECT_EQ(h.visit(v).ended_session_ms, -1) << "the new session has not ended";
}

}  // namespace
}  // namespace waitroom::room
