#include "waitroom/room/free_schedule.hpp"

#include "waitroom/room/limits.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace waitroom::room {

namespace {

// The last check-ins of other nodes land up to a flush late in a window already closed.
constexpr std::int64_t late_ms = 1'000;
// A guess: the room's own frees soon outweigh it.
constexpr double prior_weight = 2.0;
// A count above this many times the room's limits is junk (see follow).
constexpr double count_slack = 4.0;
// A drop in the places held may exceed the places old enough to free by this share of the room
// (active's windows, the history's interpolation) before it counts as no crowd's.
constexpr double drop_slack = 0.05;
// The running totals are rebased when the history's first point passes this.
constexpr double rebase_at = 1e12;
// Places held past their expected free, or filled before the history (visitors who keep their
// place for ever, holds longer than the history): above this share of the room the schedule
// cannot say when they free, and does not answer.
constexpr double max_stale_share = 0.25;

// Adds `n` places freeing uniformly over [lo, hi] (ms from the table's start) to the cumulative
// table (`step` ms a point).
void add_uniform(std::vector<double>& table, double step, double n, double lo, double hi) {
    if (!(n > 0)) {
        return;
    }
    hi = std::max(hi, lo + 1.0);
    for (std::size_t k = 0; k < table.size(); ++k) {
        const double t = static_cast<double>(k) * step;
        table[k] += n * std::clamp((t - lo) / (hi - lo), 0.0, 1.0);
    }
}

}  // namespace

double free_schedule::admitted() const {
    return marks_.empty() ? 0.0 : marks_.back().admitted;
}

double free_schedule::admitted_at(std::int64_t at_ms) const {
    if (marks_.empty()) {
        return 0;
    }
    if (at_ms <= marks_.front().at_ms) {
        return marks_.front().admitted;
    }
    auto it = std::lower_bound(marks_.begin(), marks_.end(), at_ms,
                               [](const mark& m, std::int64_t t) { return m.at_ms < t; });
    if (it == marks_.end()) {
        return marks_.back().admitted;
    }
    const mark& b = *it;
    const mark& a = *std::prev(it);
    const double f = static_cast<double>(at_ms - a.at_ms) / static_cast<double>(b.at_ms - a.at_ms);
    return a.admitted + f * (b.admitted - a.admitted);
}

double free_schedule::filled_at(double index) const {
    if (marks_.size() < 2 || index <= std::max(marks_.front().admitted, known_from_) ||
        index > marks_.back().admitted) {
        return -1;  // before the history or its start (its time is not known), or not admitted
    }
    auto it = std::lower_bound(marks_.begin(), marks_.end(), index,
                               [](const mark& m, double x) { return m.admitted < x; });
    const mark& b = *it;
    const mark& a = *std::prev(it);
    const double f = (index - a.admitted) / (b.admitted - a.admitted);
    return static_cast<double>(a.at_ms) + f * static_cast<double>(b.at_ms - a.at_ms);
}

void free_schedule::learn(double k, double h, double places) {
    if (!(k > 0)) {
        return;
    }
    // The mean over the frees seen, the prior counting as prior_weight of them, then (past a
    // room of frees: a generation) an average over the last room of frees.
    const double seen = std::min(static_cast<double>(samples_) + prior_weight, places);
    const double w = k / (seen + k);
    const double d = h - hold_ms_;
    hold_ms_ += w * d;
    var_ms2_ = (1.0 - w) * (var_ms2_ + w * d * d);
    spread_ms_ = std::min(std::sqrt(3.0 * var_ms2_),
                          hold_ms_ - static_cast<double>(session_ms_) / 2.0);
    spread_ms_ = std::max(0.0, spread_ms_);
    // Only whether any was seen, and the prior's weight, depend on the count: capped (the
    // counts are the store's, and a store's can be anything).
    samples_ = static_cast<std::int64_t>(
        std::min(static_cast<double>(samples_) + std::ceil(k), 1e15));
    matched_ = std::min<std::int64_t>(matched_ + 1, 1'000'000'000);
}

void free_schedule::start_over(std::int64_t at_ms, double in_minute, double held) {
    // The places held now were admitted at some time before, taken as now (the sliding
    // minute's could be older: then they slide out of it before the history expects, which
    // counts fewer admissions, hence fewer frees, never more). What was learned of the holds
    // stays; the schedule answers again once a free is matched within the new history.
    const double now = std::max(in_minute, held);
    marks_.clear();
    marks_.push_back({at_ms - 1, now - in_minute});
    marks_.push_back({at_ms, now});
    freed_ = now - held;
    // When the places held now were filled is not known. Before anything was learned (a room
    // that starts with its spike, the usual case), the sliding minute's are taken as filled
    // now (at most a minute off, soon outweighed); after, only what the history saw teaches.
    known_from_ = samples_ == 0 ? now - in_minute : now;
    matched_ = 0;
    unmatched_ = false;
    pending_frees_ = 0;
    table_.clear();
}

std::size_t free_schedule::silence_bin(std::int64_t at_ms, std::int64_t start) const {
    // Silent since the middle of the entry's span (a window or a run of them), at least 0.
    const double silence =
        static_cast<double>(at_ms - start) - static_cast<double>(run_ms_) / 2.0;
    return std::min<std::size_t>(silence_bins - 1,
                                 static_cast<std::size_t>(std::max(0.0, silence) / bin_ms_));
}

void free_schedule::learn_comebacks(std::int64_t at_ms, windows now, std::int64_t max_gap_ms) {
    const std::int64_t dt = at_ms - windows_at_ms_;
    if (!windows_.empty() && dt > 0 && dt <= max_gap_ms) {
        const double keep =
            std::exp(-static_cast<double>(dt) / (2.0 * static_cast<double>(session_ms_)));
        for (std::size_t b = 0; b < silence_bins; ++b) {
            exposed_[b] *= keep;
            comebacks_[b] *= keep;
        }
        // Other nodes' last check-ins land up to a flush and a sync late, and a node whose
        // clock runs ahead drops a window that early: a sync's time each way, at least late_ms.
        const std::int64_t late = std::max(late_ms, 2 * dt);
        for (const auto& [w, n] : windows_) {
            // Closed then, and a flush before, and every window of it still counted now and a
            // while after: a drop is visitors coming back, not joining late or freeing.
            if (w + run_ms_ + late > windows_at_ms_ ||
                w + window_ms_ + live_session_ms_ <= at_ms + late) {
                continue;
            }
            auto it = std::lower_bound(now.begin(), now.end(), w,
                                       [](const auto& e, std::int64_t x) { return e.first < x; });
            const std::int64_t m = it != now.end() && it->first == w ? it->second : 0;
            if (m > n) {
                continue;  // joined late after all
            }
            const std::size_t bin = silence_bin(windows_at_ms_, w);
            // The hazard of coming back, as the log of the share still silent (its comebacks
            // come in lumps: a crowd that browses a page every 5 s all comes back at 5 s,
            // which a count of comebacks per place-second would tell as 1 in e staying gone).
            // Half a visitor each way keeps a window that all came back finite.
            exposed_[bin] += static_cast<double>(n) * static_cast<double>(dt);
            comebacks_[bin] += static_cast<double>(n) *
                               std::log((static_cast<double>(n) + 0.5) /
                                        (static_cast<double>(m) + 0.5));
        }
    }
    windows_ = std::move(now);
    windows_at_ms_ = at_ms;
}

std::vector<double> free_schedule::staying_gone() const {
    // The hazard of each bin with enough exposure (a place for a bin's time), else the last
    // such bin's before it (silences not seen yet are taken as the longest seen); none before
    // the first: not known (-1). Nothing is known until the silences seen reach a quarter of a
    // session: a spike's first seconds have seen no comeback yet (the next page is still to
    // come), which would tell every visitor gone.
    std::vector<double> q(silence_bins, -1.0);
    std::vector<double> rate(silence_bins, -1.0);
    double last = -1;
    double seen_ms = 0;
    for (std::size_t b = 0; b < silence_bins; ++b) {
        if (exposed_[b] >= bin_ms_) {
            last = comebacks_[b] / exposed_[b];
            seen_ms = static_cast<double>(b + 1) * bin_ms_;
        }
        rate[b] = last;
    }
    if (seen_ms < static_cast<double>(live_session_ms_) / 4.0) {
        return q;
    }
    double sum = 0;
    for (std::size_t b = silence_bins; b-- > 0;) {
        if (rate[b] < 0) {
            break;
        }
        sum += rate[b] * bin_ms_;
        q[b] = std::exp(-sum);
    }
    return q;
}

void free_schedule::follow(std::int64_t at_ms, std::int64_t admitted_last_minute,
                           std::int64_t active, const windows& active_windows, const limits& l,
                           std::int64_t max_gap_ms, bool tabulate_now) {
    const double places = static_cast<double>(std::max<std::int64_t>(1, l.places));
    const std::int64_t span = std::max<std::int64_t>(1'000, l.rate_span_ms);
    session_ms_ = std::max<std::int64_t>(60'000, l.session_ms);
    // Long enough for holds of several sessions (longer ones are not measured: the linear
    // model answers), and for a point about every sync over the sliding minute the cumulative
    // count looks back on.
    keep_ms_ = std::max(8 * session_ms_, 4 * span);
    // The check-in windows count by the configured session (not the prior's minute at least).
    live_session_ms_ = std::max<std::int64_t>(1, l.session_ms);
    window_ms_ = std::max<std::int64_t>(1, l.active_window_ms);
    run_ms_ = std::max(window_ms_, l.active_run_ms);
    const double bin_ms = std::max(static_cast<double>(run_ms_),
                                   static_cast<double>(live_session_ms_ + run_ms_) /
                                       static_cast<double>(silence_bins));
    if (bin_ms != bin_ms_ || exposed_.size() != silence_bins) {
        bin_ms_ = bin_ms;
        exposed_.assign(silence_bins, 0.0);
        comebacks_.assign(silence_bins, 0.0);
        windows_.clear();
    }
    if (samples_ == 0) {
        hold_ms_ = prior_hold_sessions * static_cast<double>(session_ms_);
        spread_ms_ = prior_spread_sessions * static_cast<double>(session_ms_);
        var_ms2_ = spread_ms_ * spread_ms_ / 3.0;
    }
    // A place is held at least a session (a minute or more), so it admits at most about twice
    // in a sliding minute, and the rate limit bounds the minute too; the store's counts exceed
    // the limits only by what nodes admitted from stale counts. A count far beyond them (or
    // negative) is no crowd's: nothing is learned from it, and the history starts over from
    // the next count.
    const double by_rate = l.new_users > 0 ? static_cast<double>(l.new_users) : places;
    const double minute_cap = count_slack * (std::min(by_rate, 2.0 * places) + 1.0);
    const double held_cap = count_slack * (places + 1.0);
    if (admitted_last_minute < 0 || active < 0 ||
        static_cast<double>(admitted_last_minute) > minute_cap ||
        static_cast<double>(active) > held_cap) {
        marks_.clear();
        matched_ = 0;
        pending_frees_ = 0;
        table_.clear();
        windows_.clear();
        return;
    }
    // The places by check-in window: a store lists at most max_active_windows, ascending, each
    // counting no more than the places held can be. Others are no store's: not learned from.
    // An entry that is not live now (a node's clock ahead or behind) is left out on its own.
    const bool windows_sane =
        active_windows.size() <= max_active_windows_read &&
        std::is_sorted(active_windows.begin(), active_windows.end()) &&
        std::all_of(active_windows.begin(), active_windows.end(), [&](const auto& e) {
            return e.second >= 0 && static_cast<double>(e.second) <= held_cap;
        });
    if (windows_sane) {
        windows live;
        for (const auto& e : active_windows) {
            if (e.first > at_ms - run_ms_ - live_session_ms_ && e.first <= at_ms + max_gap_ms) {
                live.push_back(e);
            }
        }
        learn_comebacks(at_ms, std::move(live), max_gap_ms);
    } else {
        windows_.clear();
    }
    const double in_minute = static_cast<double>(admitted_last_minute);
    const double held = static_cast<double>(active);
    if (marks_.empty() || at_ms <= marks_.back().at_ms || at_ms - marks_.back().at_ms > max_gap_ms) {
        start_over(at_ms, in_minute, held);
        return;
    }
    // What slid out of the sliding minute since is what was admitted a minute before.
    const double now = std::max(marks_.back().admitted, in_minute + admitted_at(at_ms - span));
    const std::int64_t spacing = keep_ms_ / static_cast<std::int64_t>(max_marks - 2);
    if (marks_.size() >= 3 && at_ms - marks_[marks_.size() - 2].at_ms < spacing) {
        marks_.back() = {at_ms, now};  // keeps the newest point current, the history coarse
    } else {
        marks_.push_back({at_ms, now});
    }
    while (marks_.size() > max_marks ||
           (marks_.size() > 3 && marks_[1].at_ms <= at_ms - keep_ms_)) {
        marks_.erase(marks_.begin());
    }
    // The totals stay far below 2^53, where a double still counts every admission.
    if (marks_.front().admitted > rebase_at) {
        const double by = marks_.front().admitted;
        for (mark& m : marks_) {
            m.admitted -= by;
        }
        freed_ -= by;
        known_from_ -= by;
    }
    // More places held than the admissions less the frees counted: some of those frees never
    // happened (a sync that missed some nodes' visitors, a store refilling): given back.
    const double owed = now - held;
    if (owed < freed_) {
        pending_frees_ = std::max(0.0, pending_frees_ - (freed_ - owed));
        freed_ = owed;
    }
    const double k = owed - freed_;
    // Only places filled a session ago (a window's slack) can have freed. A drop larger than
    // those (the store restarted empty, a refill missing nodes) is no crowd's frees: the
    // history starts over rather than learn them.
    const double old_enough = admitted_at(at_ms - session_ms_ + max_gap_ms) - freed_;
    if (k > std::max(0.0, old_enough) + 2.0 + drop_slack * places) {
        start_over(at_ms, in_minute, held);
        return;
    }
    // Frees are learned a sync after they were counted, if that sync did not give them back.
    learn(pending_frees_, pending_hold_ms_, places);
    pending_frees_ = 0;
    if (k > 0) {
        // First filled, first freed: the places that freed were admitted about when the
        // (freed_ + k/2)-th admission came. Clamped to what a hold can be: at least a session,
        // at most the history.
        const double filled = filled_at(freed_ + k / 2.0);
        // Frees matched to places filled before a history that reaches back 8 sessions: holds
        // longer than it, or visitors who keep their place for ever (first filled, first freed
        // then matches the room's frees to theirs). The schedule cannot say when those free:
        // it does not answer until a free matches within the history again.
        unmatched_ = filled < 0 && marks_.front().admitted > known_from_ &&
                     freed_ + k / 2.0 <= marks_.front().admitted;
        if (filled >= 0) {
            pending_frees_ = k;
            pending_hold_ms_ = std::clamp(static_cast<double>(at_ms) - filled,
                                          static_cast<double>(session_ms_),
                                          static_cast<double>(keep_ms_));
        }
    }
    freed_ = owed;
    if (tabulate_now) {
        tabulate(at_ms, held);
    } else {
        table_.clear();
    }
}

void free_schedule::tabulate(std::int64_t at_ms, double held) {
    table_.clear();
    if (unmatched_ || marks_.size() < 2) {
        return;
    }
    as_of_ms_ = at_ms;
    const double hold = hold_ms_;
    const double spread = spread_ms_;
    const double places = std::max(1.0, std::max(held, marks_.back().admitted - freed_));
    step_ms_ = 2.0 * (hold + spread) / static_cast<double>(table_points - 1);
    tail_ms_per_place_ = hold / places;
    std::vector<double> first(table_points, 0.0);
    // The places whose visitors will not come back free when their last check-in window stops
    // counting: known to the second.
    double pinned = 0;
    bool told = false;
    if (windows_at_ms_ == at_ms && !windows_.empty()) {
        const std::vector<double> gone = staying_gone();
        for (const auto& [w, n] : windows_) {
            const double q = gone[silence_bin(at_ms, w)];
            if (q < 0) {
                continue;
            }
            told = true;
            const double k = static_cast<double>(n) * q;
            // When its last window stops counting (a run's: a window sooner for the others).
            const double ends = static_cast<double>(w + run_ms_ + live_session_ms_ - at_ms);
            add_uniform(first, step_ms_, k, std::max(0.0, ends - 1.0), std::max(1.0, ends));
            pinned += k;
        }
    }
    pinned = std::min(pinned, places);
    // Before any free, the prior's holds from when the places were filled (a room that starts
    // with its spike, the usual case: its history saw every place filled). Once frees were
    // learned, a history that starts over answers again when a free matches within it.
    if (matched_ <= 0 && samples_ > 0) {
        return;
    }
    // The others come back first: they free a session after that at the earliest.
    const double floor_ms = told ? static_cast<double>(live_session_ms_) : 0.0;
    // The places held now, by when they were filled (first filled, first freed: the last
    // admissions), each freeing a hold after, and not before now (they have not freed yet).
    // Places past their expected free, or filled before the history, are stale: nobody knows
    // when they free.
    double stale = 0;
    auto place = [&](double n, double from_ms, double to_ms) {
        const double filled = (from_ms + to_ms) / 2.0 - static_cast<double>(at_ms);
        const double half = spread + (to_ms - from_ms) / 2.0;
        const double lo = filled + hold - half;
        const double hi = filled + hold + half;
        if (hi <= 0) {
            stale += n;
        } else {
            add_uniform(first, step_ms_, n, std::max(floor_ms, lo), std::max(floor_ms, hi));
        }
    };
    const double skip = freed_ + pinned;
    const double before = marks_.front().admitted - skip;
    if (before > 0) {
        stale += before;
    }
    for (std::size_t j = 1; j < marks_.size(); ++j) {
        const mark& a = marks_[j - 1];
        const mark& b = marks_[j];
        const double from = std::max(a.admitted, skip);
        const double n = b.admitted - from;
        if (n <= 0 || b.admitted <= a.admitted) {
            continue;
        }
        const double start = static_cast<double>(a.at_ms) +
                             (from - a.admitted) / (b.admitted - a.admitted) *
                                 static_cast<double>(b.at_ms - a.at_ms);
        place(n, start, static_cast<double>(b.at_ms));
    }
    // Many stale places (visitors who keep theirs for ever push the first-filled matching
    // past the history): the schedule would tell the queue they free any moment. The linear
    // model answers. A few may free any time within a hold, not all at once.
    if (stale > max_stale_share * places) {
        return;
    }
    add_uniform(first, step_ms_, stale, floor_ms, std::max(floor_ms + 1.0, hold + spread));
    // Each of those frees is refilled from the queue, and that place frees a hold later: the
    // next generations, as far as the table reaches (two holds and their spread).
    table_ = first;
    std::vector<double> gen = std::move(first);
    for (int g = 0; g < 3; ++g) {
        std::vector<double> next(table_points, 0.0);
        for (std::size_t k = 1; k < table_points; ++k) {
            const double n = gen[k] - gen[k - 1];
            const double u = (static_cast<double>(k) - 0.5) * step_ms_;
            add_uniform(next, step_ms_, n, u + hold - spread, u + hold + spread);
        }
        for (std::size_t k = 0; k < table_points; ++k) {
            table_[k] += next[k];
        }
        gen = std::move(next);
    }
}

double free_schedule::wait_ms(double frees) const {
    if (table_.empty()) {
        return -1;
    }
    if (!(frees > 0)) {
        return 0;
    }
    if (frees > table_.back()) {
        const double beyond = std::min(frees - table_.back(), 1e12);
        return static_cast<double>(table_points - 1) * step_ms_ + beyond * tail_ms_per_place_;
    }
    auto it = std::lower_bound(table_.begin(), table_.end(), frees);
    const auto k = static_cast<std::size_t>(it - table_.begin());
    if (k == 0) {
        return 0;
    }
    const double a = table_[k - 1];
    const double b = table_[k];
    const double f = b > a ? (frees - a) / (b - a) : 1.0;
    return (static_cast<double>(k - 1) + f) * step_ms_;
}

}  // namespace waitroom::room
