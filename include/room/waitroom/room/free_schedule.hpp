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
// from a prior of 1.35 to 2.15 sessions; the expected frees to come (the places held now,
// conditioned on not having freed yet, then the places they refill) are tabulated once per
// sync. Memory is bounded per room whatever arrives: at most max_marks points of history,
// table_points values.
//
// The counts are the store's, and a store's can be anything (junk, a restart that refills it, a
// node's visitors missing for a sync): a count no real crowd could give (above a few times the
// limits, or a drop in the places held larger than the places old enough to free) starts the
// history over instead of being learned from, and so does a rise that shows frees counted before
// never happened. The schedule answers from the prior's holds before any free (applied to when
// the places were filled: a spike's first answers), then only from a history of its own (a free
// matched to a place filled within it), and while it is consistent (few places held past their
// expected free or filled before the history: visitors who keep their place for ever);
// otherwise the estimate is the linear model's (ready() false).
//
// A store that lists the places held by their visitor's last check-in window (active_windows)
// tells more: a visitor who stopped browsing frees its place when that window stops counting,
// to the second, a session before the free is seen. Which silent visitors still come back is
// learned from consecutive lists: the share of a closed window's visitors that check in again,
// by how long they had been silent (silence_bins, averaged over about two sessions). The places
// of visitors who will not are pinned at their window's end; the others come back first, and
// free no sooner than a session from now. The schedule answers from the windows alone before
// any free once the silences seen reach a quarter of a session (a spike's first seconds have
// seen no comeback yet). A window's count also drops when a copy of an admitted cookie checks
// in from it, or when an origin revokes a session: read as comebacks, which tells the queue
// longer waits, never shorter, and never moves an admission.

#include <cstdint>
#include <utility>
#include <vector>

namespace waitroom::room {

class free_schedule {
  public:
    // The room's limits as the schedule needs them.
    struct limits {
        std::int64_t places = 0;      // total_active_users
        std::int64_t session_ms = 0;  // session_duration
        std::int64_t rate_span_ms = 60'000;  // the sliding minute of admitted_last_minute
        std::int64_t new_users = 0;          // new_users_per_minute; 0: bound by places only
        std::int64_t active_window_ms = 1'000;  // the windows of last check-ins (limits.hpp)
        std::int64_t active_run_ms = 0;  // the span of one entry of them (active_run_ms)
    };
    using windows = std::vector<std::pair<std::int64_t, std::int64_t>>;
    // Before any place is seen to free, visitors are assumed to hold their place 1.35 to 2.15
    // sessions (a visit of about a third to one and a sixth sessions, then the session after its
    // last request): the mean is the linear model's prior too (rules::prior_sessions), with
    // sessions of at least a minute as there. (A spread of a session, 1.25 to 2.25, had the
    // first places free before real visitors' did: the front of a spike was told a fifth short
    // on the real daemons, issue 16, bench/README.md.)
    static constexpr double prior_hold_sessions = 1.75;
    static constexpr double prior_spread_sessions = 0.4;
    static constexpr std::size_t max_marks = 512;
    static constexpr std::size_t table_points = 129;
    // The silences whose comebacks are learned (the last check-in windows followed are
    // bounded by max_active_windows_read, limits.hpp).
    static constexpr std::size_t silence_bins = 64;

    // Follows the store's counts at `at_ms`. A first call, a step back in time, a gap longer
    // than `max_gap_ms` (a store outage: the counts after it say nothing of what happened in it)
    // or a count no real crowd could give starts over. The table of frees to come is built
    // only when `tabulate` (its places bind and it queues or is full: nobody asks otherwise).
    void follow(std::int64_t at_ms, std::int64_t admitted_last_minute, std::int64_t active,
                const windows& active_windows, const limits& l, std::int64_t max_gap_ms,
                bool tabulate = true);
    // The same from a store that does not report the last check-in windows (an older script).
    void follow(std::int64_t at_ms, std::int64_t admitted_last_minute, std::int64_t active,
                const limits& l, std::int64_t max_gap_ms, bool tabulate = true) {
        follow(at_ms, admitted_last_minute, active, windows{}, l, max_gap_ms, tabulate);
    }
    // At least one place was seen to free since the schedule started: before that the room has
    // only the prior of how long its visitors stay.
    bool measured() const { return samples_ > 0; }
    // wait_ms() answers: nothing learned yet (the prior) or a free matched to a place filled
    // within the current history, the history is consistent, and the last follow tabulated.
    bool ready() const { return !table_.empty(); }
    // Expected ms from the last followed count until `frees` more places have freed (the next
    // place is 1); -1 when not ready(). Never negative otherwise, finite for finite input.
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
    double admitted_at(std::int64_t at_ms) const;  // interpolated; the first point's before it
    double filled_at(double index) const;          // when admission number `index` came; -1 none
    void start_over(std::int64_t at_ms, double in_minute, double held);
    void learn(double frees, double hold_ms, double places);
    void tabulate(std::int64_t at_ms, double held);
    void learn_comebacks(std::int64_t at_ms, windows now, std::int64_t max_gap_ms);
    // The silence bin of an entry starting at `start`, seen at `at_ms`.
    std::size_t silence_bin(std::int64_t at_ms, std::int64_t start) const;
    // Per silence bin, the share of the visitors silent that long who will not check in again
    // (-1: not known yet).
    std::vector<double> staying_gone() const;

    std::vector<mark> marks_;  // ascending, at most max_marks
    double freed_ = 0;
    double known_from_ = 0;     // admissions up to this one were filled at unknown times
    std::int64_t matched_ = 0;  // frees matched to a place filled within the current history
    bool unmatched_ = false;    // the last frees fell before the history
    double pending_frees_ = 0;  // counted at the last follow, learned at the next
    double pending_hold_ms_ = 0;
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
    // The last check-in windows of the last follow, and the comebacks (a window's visitors
    // checking in again) learned by silence: per bin, the place-ms exposed and the comebacks.
    windows windows_;
    std::int64_t windows_at_ms_ = 0;
    std::int64_t window_ms_ = 1'000;        // a check-in window
    std::int64_t run_ms_ = 1'000;           // an entry of the list: a window or a run of them
    std::int64_t live_session_ms_ = 60'000;  // session_duration as configured
    double bin_ms_ = 1'000;
    std::vector<double> exposed_;
    std::vector<double> comebacks_;
    double tail_ms_per_place_ = 0;
};

}  // namespace waitroom::room
