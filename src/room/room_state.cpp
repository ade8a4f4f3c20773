#include "waitroom/room/room_state.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "admission_rules.hpp"

namespace waitroom::room {

room_state::room_state(room_counts counts, const room_limits& limits)
    : counts_(std::move(counts)), known_(true) {
    std::int64_t by_active = limits.total_active_users - counts_.active;
    std::int64_t by_rate = limits.new_users_per_minute - counts_.admitted_last_minute;
    free_ = std::max<std::int64_t>(0, std::min(by_active, by_rate));
    std::sort(counts_.waiting.begin(), counts_.waiting.end());
    std::sort(counts_.revoked.begin(), counts_.revoked.end());
    std::sort(counts_.flagged.begin(), counts_.flagged.end());
    prefix_.reserve(counts_.waiting.size() + 1);
    prefix_.push_back(0);
    for (const auto& [bucket, n] : counts_.waiting) {
        waiting_total_ += std::max<std::int64_t>(0, n);
        prefix_.push_back(waiting_total_);
    }
    // Capacity nobody may take (prequeue, queue_all, suspended) is not free for the hold: at an
    // event's start its places are new, and the prequeued front gets them first.
    seen now{counts_.as_of_ms, limits.needs_slots ? free_ : 0, {}};
    now.queued_up_to.reserve(counts_.waiting.size());
    for (std::size_t i = 0; i < counts_.waiting.size(); ++i) {
        now.queued_up_to.emplace_back(counts_.waiting[i].first, prefix_[i + 1]);
    }
    seen_.push_back(std::move(now));
    queueing_since_ms_ = waiting_total_ > 0 ? counts_.as_of_ms : 0;
    // A room that filled within the last minute frees no place before a session has passed:
    // the admissions of that session measure no turnover.
    const bool filled_lately =
        rules::filled_lately(limits.total_active_users, limits.new_users_per_minute, counts_);
    // A room that admits nobody (prequeue, queue_all, suspended) has no turnover to learn: its
    // measure starts when it admits again.
    turnover_from_ms_ = queueing_since_ms_ > 0 && limits.needs_slots
                            ? queueing_since_ms_ + (filled_lately ? limits.session_ms : 0)
                            : 0;
    session_ms_ = limits.session_ms;
    abandon_per_minute_ = prior_abandon_per_minute();
    rate_limit_ = limits.new_users_per_minute;
    prior_turnover_ = rules::turnover_if(limits.total_active_users, limits.new_users_per_minute,
                                         limits.session_ms, rules::prior_sessions);
    schedule_limits_ = {limits.total_active_users, limits.session_ms,
                        limits.rate_span_ms,       limits.new_users_per_minute,
                        active_window_ms(limits),  active_run_ms(limits)};
}

bool room_state::free_unclaimed_for(std::int64_t bucket, std::int64_t span_ms) const {
    if (seen_.empty() || seen_.front().as_of_ms > seen_.back().as_of_ms - span_ms) {
        return false;  // not followed for that long
    }
    auto before = [bucket](const seen& e) {
        auto it = std::lower_bound(e.queued_up_to.begin(), e.queued_up_to.end(), bucket,
                                   [](const auto& q, std::int64_t b) { return q.first < b; });
        return it == e.queued_up_to.begin() ? std::int64_t{0} : std::prev(it)->second;
    };
    const std::int64_t ahead_now = before(seen_.back());
    const std::int64_t from = seen_.back().as_of_ms - span_ms;
    for (auto it = seen_.rbegin(); it != seen_.rend(); ++it) {
        if (it->free <= 0 || before(*it) > ahead_now) {
            return false;  // no place free then, or someone ahead was admitted or left since
        }
        if (it->as_of_ms <= from) {
            break;  // the snapshot in force at the span's start
        }
    }
    return true;
}

std::int64_t room_state::waiting_before(std::int64_t bucket) const {
    auto it = std::lower_bound(counts_.waiting.begin(), counts_.waiting.end(), bucket,
                               [](const auto& e, std::int64_t b) { return e.first < b; });
    return prefix_.empty() ? 0 : prefix_[static_cast<std::size_t>(it - counts_.waiting.begin())];
}

std::int64_t room_state::waiting_in(std::int64_t bucket) const {
    auto it = std::lower_bound(counts_.waiting.begin(), counts_.waiting.end(), bucket,
                               [](const auto& e, std::int64_t b) { return e.first < b; });
    if (it == counts_.waiting.end() || it->first != bucket) {
        return 0;
    }
    return std::max<std::int64_t>(0, it->second);
}

void room_state::follow(const room_state& previous, std::int64_t window_ms) {
    // The same queue goes on: it keeps its start, and the departures measured last for as long
    // as it does and while they are measured. One that emptied and began again is a new crowd,
    // and a measure with no sample for a session (fewer than 20 waiting a minute behind the
    // front) is stale. Both are told the prior until measured again: bots that joined one queue
    // and then stopped refreshing would otherwise shorten every later queue's estimates, or a
    // queue's own long after they left.
    if (waiting_total_ > 0 && previous.queueing_since_ms_ > 0) {
        queueing_since_ms_ = previous.queueing_since_ms_;
        abandon_per_minute_ = previous.abandon_per_minute_;
        abandon_measured_at_ms_ = previous.abandon_measured_at_ms_;
        abandon_measured_ =
            previous.abandon_measured_ &&
            static_cast<double>(counts_.as_of_ms) - static_cast<double>(abandon_measured_at_ms_) <=
                fade_ms();
    }
    if (previous.known_) {
        frees_ = previous.frees_;
    }
    // The schedule follows every count (its history is the room's admissions) but tabulates
    // only when someone may ask: its places bind (fill_page's own test) and it queues, or is
    // full (the first of a queue are queued before a snapshot shows them).
    frees_.follow(
        counts_.as_of_ms, counts_.admitted_last_minute, counts_.active, counts_.active_windows,
        schedule_limits_, window_ms,
        (waiting_total_ > 0 || free_ == 0) &&
            rules::places_bind(schedule_limits_.places, schedule_limits_.new_users, counts_));
    const std::int64_t dt = counts_.as_of_ms - previous.counts_.as_of_ms;
    // Across a gap (store outage) the store forgot the windows nobody could refresh: that is
    // no departure, and capacity seen free before it says nothing of now.
    const bool gap = !previous.known_ || dt <= 0 || dt > window_ms;
    // Turnover: while the room queues, every admission fills a place a session end freed, so a
    // minute of such admissions is the room's real turnover (which visitors who browse for a
    // while make slower than total_active_users / session). Places filled together free
    // together, a visit later: a room that filled in a spike turns over in generations, and
    // its sliding minute swings between all of a generation and nearly none (told real
    // visitors 2-4 times their wait, then half of it). Averaged over a session (at least a
    // minute), from the prior, it follows the turnover and not the generations. A minute at
    // the rate limit measures the limit, which holds whatever the places do: taken as it is.
    if (!abandon_measured_) {
        abandon_per_minute_ = prior_abandon_per_minute();  // fades with the queueing carried
    }
    if (turnover_from_ms_ > 0 && previous.turnover_from_ms_ > 0) {
        turnover_from_ms_ = previous.turnover_from_ms_;
        turnover_per_minute_ = previous.turnover_per_minute_;
    }
    if (turnover_from_ms_ > 0 && counts_.as_of_ms - turnover_from_ms_ >= 60'000) {
        if (turnover_per_minute_ <= 0) {
            turnover_per_minute_ = prior_turnover_;
        }
        if (!gap && counts_.admitted_last_minute >= rate_limit_) {
            turnover_per_minute_ = static_cast<double>(rate_limit_);
        } else if (!gap) {
            const double span_ms = fade_ms();
            const double sample =
                static_cast<double>(std::max<std::int64_t>(0, counts_.admitted_last_minute));
            turnover_per_minute_ +=
                std::min(1.0, static_cast<double>(dt) / span_ms) * (sample - turnover_per_minute_);
        }
    }
    if (gap) {
        return;
    }
    // How long capacity stayed free, and whether the queue ahead moved meanwhile: the snapshots
    // of the last 15 s (the front's hold and then some).
    constexpr std::int64_t kept_ms = 15'000;
    std::vector<seen> kept;
    kept.reserve(previous.seen_.size() + 1);
    for (std::size_t i = 0; i < previous.seen_.size(); ++i) {
        const bool superseded = i + 1 < previous.seen_.size() &&
                                previous.seen_[i + 1].as_of_ms <= counts_.as_of_ms - kept_ms;
        if (!superseded) {
            kept.push_back(previous.seen_[i]);
        }
    }
    kept.push_back(std::move(seen_.back()));
    seen_ = std::move(kept);

    if (counts_.waiting.empty()) {
        return;
    }
    // Only buckets more than a minute of admissions behind the front (no admission comes from
    // them meanwhile) and closed to arrivals (a new visitor's delta lands up to a flush late)
    // lose visitors, by giving up.
    const std::int64_t ahead_min = previous.free_ + previous.counts_.admitted_last_minute;
    const std::int64_t to = floor_to(counts_.as_of_ms, window_ms) - 2 * window_ms;
    auto counted = [&](std::int64_t b) { return b < to && previous.waiting_before(b) > ahead_min; };
    auto sum = [&](const room_counts& c) {
        std::int64_t n = 0;
        for (const auto& [b, k] : c.waiting) {
            if (counted(b)) {
                n += std::max<std::int64_t>(0, k);
            }
        }
        return n;
    };
    const std::int64_t before = sum(previous.counts_);
    if (before < 20) {
        return;  // too few to tell a departure from noise
    }
    const double minutes = static_cast<double>(dt) / 60'000.0;
    const double lost = static_cast<double>(std::max<std::int64_t>(0, before - sum(counts_)));
    const double sample = std::min(1.0, lost / static_cast<double>(before) / minutes);
    // An average over about a minute (departures show up in lumps, when a window stops
    // counting), from the prior. A first measure below the prior replaces it: averaged from the
    // prior, or weighing it as ten seconds of measure, told a long queue that nobody leaves a
    // fifth or a tenth short (the simulator's spike-single, 30-minute waits, where even 1 % a
    // minute is a sixth of the wait). One above it moves it as any measure does: a first lump
    // (or bots that joined together and stopped refreshing) would otherwise stand for a whole
    // minute's rate.
    const double from = abandon_per_minute_;
    abandon_per_minute_ = !abandon_measured_ && sample <= from
                              ? sample
                              : from + std::min(1.0, minutes) * (sample - from);
    abandon_measured_ = true;
    abandon_measured_at_ms_ = counts_.as_of_ms;
}

double room_state::prior_abandon_per_minute() const {
    const double queued_ms = static_cast<double>(
        queueing_since_ms_ > 0 ? std::max<std::int64_t>(0, counts_.as_of_ms - queueing_since_ms_)
                               : 0);
    return rules::prior_abandon_per_minute * std::exp(-queued_ms / fade_ms());
}

double room_state::fade_ms() const {
    return static_cast<double>(std::max<std::int64_t>(60'000, session_ms_));
}

double room_state::prior_share_staying() const {
    return abandon_measured_ ? 0.0 : std::exp(-abandon_per_minute_);  // a minute of the prior
}

std::uint32_t room_state::nodes() const {
    std::uint64_t n = 0;  // at most as many datacenters as a reply holds: no wrap
    for (const auto& dc : counts_.datacenters) {
        n += dc.nodes;
    }
    return static_cast<std::uint32_t>(
        std::min<std::uint64_t>(n, std::numeric_limits<std::uint32_t>::max()));
}

const room_state* state_snapshot::find(const std::string& room_id) const {
    auto it = rooms.find(room_id);
    return it == rooms.end() ? nullptr : &it->second;
}

bool slot_pool::try_take(std::int64_t now_ms) {
    if (expired(now_ms)) {
        return false;
    }
    std::int64_t cur = available_.load(std::memory_order_relaxed);
    while (cur > 0) {
        if (available_.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
            taken_.fetch_add(1, std::memory_order_acq_rel);
            return true;
        }
    }
    return false;
}

void slot_pool::add(std::int64_t n) {
    if (n > 0) {
        available_.fetch_add(n, std::memory_order_acq_rel);
    }
}

std::int64_t slot_pool::take_up_to(std::int64_t n) {
    std::int64_t cur = available_.load(std::memory_order_relaxed);
    while (cur > 0 && n > 0) {
        std::int64_t take = std::min(cur, n);
        if (available_.compare_exchange_weak(cur, cur - take, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
            return take;
        }
    }
    return 0;
}

node_state::node_state() : snapshot_(std::make_shared<const state_snapshot>()) {}

void node_state::publish(std::shared_ptr<state_snapshot> s) {
    for (auto& [id, room] : s->rooms) {
        if (room.taken_behind_mark_ < 0) {
            room.taken_behind_mark_ = pool(id).reported_behind();
        }
    }
    std::uint64_t v = version_.load(std::memory_order_relaxed) + 1;
    s->version = v;
    snapshot_.store(std::move(s), std::memory_order_release);
    version_.store(v, std::memory_order_release);
}

slot_pool& node_state::pool(const std::string& room_id) {
    std::lock_guard lock(mu_);
    auto& p = pools_[room_id];
    if (!p) {
        p = std::make_unique<slot_pool>();
    }
    return *p;
}

void node_state::submit(delta_set& deltas) {
    if (deltas.empty()) {
        return;
    }
    std::lock_guard lock(inbox_mu_);
    move_into(deltas);
}

void node_state::move_into(delta_set& deltas) {
    // Entries are reset, not erased: workers keep pointers to their per-room deltas.
    for (auto& [id, d] : deltas) {
        if (!d.empty()) {
            inbox_[id].merge(d);
            d.reset();
        }
    }
}

bool node_state::try_submit(delta_set& deltas) {
    std::unique_lock lock(inbox_mu_, std::try_to_lock);
    if (!lock.owns_lock()) {
        return false;
    }
    move_into(deltas);
    return true;
}

std::int64_t node_state::unreported_renewals(const std::string& room_id, const room_limits& l,
                                             std::int64_t now_ms) {
    std::lock_guard lock(inbox_mu_);
    auto it = inbox_.find(room_id);
    if (it == inbox_.end()) {
        return 0;
    }
    std::int64_t n = 0;
    for (const auto& [w, d] : it->second.active.entries()) {
        if (d < 0 && !active_window_live(w, l, now_ms)) {
            n -= d;
        }
    }
    return n;
}

delta_set node_state::take_deltas() {
    std::lock_guard lock(inbox_mu_);
    delta_set out;
    out.swap(inbox_);
    return out;
}

}  // namespace waitroom::room
