#pragma once
// When a room's places will free, from what the room saw (issue 16, item 4): the admissions of
// the last sessions and the session ends measured since. Each place frees a hold after it was
// filled (the visit, then session_duration after its last request), so a room that filled in a
// spike frees in generations, a hold apart; the linear model (wait = ahead / turnover) spreads
// them evenly and told real visitors a third too much between generations, then too little.
//
// Followed at every sync (room_state::follow, never on the request path), from the store's
// counts only: the cumulative admissions are rebuilt from the sliding minute (what slid out of it
// is what was admitted a minute before), the frees are the admissions minus the places still
// held, and each free is matched to the oldest place still held (first filled, first freed):
// its age is a measured hold. The holds' mean and spread are learned over about a room of frees
// from a prior of 1 to 3 sessions; the expected frees to come (the places held now, conditioned
// on not having freed yet, then the places they refill) are tabulated once per sync. Memory is
// bounded per room whatever arrives: at most max_marks points of history, table_points values.

#include <cstdint>
#include <vector>

namespace waitroom::room {

class free_schedule {
  public:
    // The room's limits as the schedule needs them.
    struct limits {
        std::int64_t places = 0;      // total_active_users
        std::int64_t session_ms = 0;  // session_duration
        std::int64_t rate_span_ms = 60'000;  // the sliding minute of admitted_last_minute
    };
    static constexpr std::size_t max_marks = 512;
    static constexpr std::size_t table_points = 129;

    // Follows the store's counts at `at_ms`. A first call, a step back in time or a gap longer
    // than `max_gap_ms` (a store outage: the counts after it say nothing of what happened in it)
    // starts over.
    void follow(std::int64_t at_ms, std::int64_t admitted_last_minute, std::int64_t active,
                const limits& l, std::int64_t max_gap_ms);
    // At least one place was seen to free since the schedule started: before that the room knows
    // nothing of how long its visitors stay, and wait_ms() answers -1.
    bool measured() const { return samples_ > 0; }
    // Expected ms from the last followed count until `frees` more places have freed (the next
    // place is 1); -1 when not measured. Never negative otherwise, finite for finite input.
    double wait_ms(double frees) const;
    double hold_ms() const { return hold_ms_; }      // learned mean hold of a place
    double spread_ms() const { return spread_ms_; }  // half-width of the holds (uniform)
    double admitted() const;                         // cumulative admissions followed
    double freed() const { return freed_; }          // cumulative frees followed
    std::size_t history_points() const { return marks_.size(); }  // at most max_marks

  private:
    struct mark {
        std::int64_t at_ms = 0;
        double admitted = 0;  // cumulative admissions up to at_ms
    };
    double admitted_at(std::int64_t at_ms) const;  // interpolated; base_ before the history
    double filled_at(double index) const;          // when admission number `index` came; -1 none
    void tabulate(std::int64_t at_ms, std::int64_t active);

    std::vector<mark> marks_;  // ascending, at most max_marks
    double base_ = 0;          // admissions before the history began
    double freed_ = 0;
    double hold_ms_ = 0;
    double spread_ms_ = 0;
    double var_ms2_ = 0;
    std::int64_t samples_ = 0;
    std::int64_t session_ms_ = 0;
    std::int64_t keep_ms_ = 0;
    // Expected cumulative frees at as_of_ms_ + k * step_ms_, k < table_points; beyond it the
    // places free at tail_ms_per_place_ each.
    std::vector<double> table_;
    std::int64_t as_of_ms_ = 0;
    double step_ms_ = 0;
    double tail_ms_per_place_ = 0;
};

}  // namespace waitroom::room
