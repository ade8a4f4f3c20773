#include "simulator.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>

#include "waitroom/room/engine.hpp"
#include "waitroom/state/error.hpp"
#include "waitroom/state/local_store.hpp"
#include "waitroom/state/sync_task.hpp"

namespace waitroom::sim {

namespace {

// Virtual time starts on a minute boundary (as the unit tests' clock does) so windows line up
// with the scenario's minutes.
constexpr std::int64_t epoch_ms = 1'800'000'000'000 - 1'800'000'000'000 % 60'000;
constexpr std::int64_t warmup_ms = 10'000;

// A discrete-event loop in virtual milliseconds: events at the same instant run in the order
// they were scheduled.
class event_loop {
  public:
    std::int64_t now() const { return now_; }
    void at(std::int64_t t, std::function<void()> f) {
        q_.push(item{std::max(t, now_), seq_++, std::move(f)});
    }
    void run_until(std::int64_t end) {
        while (!q_.empty() && q_.top().t <= end) {
            item it = std::move(const_cast<item&>(q_.top()));
            q_.pop();
            now_ = it.t;
            it.fn();
        }
        now_ = end;
    }

  private:
    struct item {
        std::int64_t t;
        std::uint64_t seq;
        std::function<void()> fn;
        bool operator>(const item& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };
    std::priority_queue<item, std::vector<item>, std::greater<item>> q_;
    std::int64_t now_ = epoch_ms - warmup_ms;
    std::uint64_t seq_ = 0;
};

// One node's link to the shared store: a call reaches the store after half the round trip and
// its answer comes back after the whole one; during an outage the call fails after the store
// timeout. The store itself is the real local_store, so leases and counts are the real ones.
class link_store final : public state::store {
  public:
    link_store(event_loop& loop, state::local_store& inner, const scenario& s, std::int64_t& calls)
        : loop_(loop), inner_(inner), s_(s), calls_(calls) {}

    void sync(state::node_report report, sync_handler done) override {
        ++calls_;
        const std::int64_t sent = loop_.now();
        loop_.at(sent + s_.sync_delay_ms / 2, [this, sent, report = std::move(report),
                                               done = std::move(done)]() mutable {
            if (down(loop_.now())) {
                fail_later(sent, [done]() {
                    state::sync_result r;
                    r.ec = state::errc::unavailable;
                    done(std::move(r));
                });
                return;
            }
            report.now_ms = loop_.now();  // the store's clock
            state::sync_result res;
            inner_.sync(std::move(report), [&res](state::sync_result r) { res = std::move(r); });
            loop_.at(
                sent + s_.sync_delay_ms,
                [done = std::move(done), res = std::move(res)]() mutable { done(std::move(res)); });
        });
    }

    void top_up(state::top_up_request req, top_up_handler done) override {
        ++calls_;
        const std::int64_t sent = loop_.now();
        loop_.at(sent + s_.sync_delay_ms / 2, [this, sent, req = std::move(req),
                                               done = std::move(done)]() mutable {
            if (down(loop_.now())) {
                fail_later(sent, [done]() {
                    state::top_up_result r;
                    r.ec = state::errc::unavailable;
                    done(r);
                });
                return;
            }
            req.now_ms = loop_.now();
            state::top_up_result res;
            inner_.top_up(std::move(req), [&res](state::top_up_result r) { res = r; });
            loop_.at(sent + s_.sync_delay_ms, [done = std::move(done), res]() { done(res); });
        });
    }

  private:
    bool down(std::int64_t t) const {
        const std::int64_t rel = t - epoch_ms;
        for (const auto& o : s_.outages) {
            if (rel >= o.start_ms && rel < o.start_ms + o.length_ms) {
                return true;
            }
        }
        return false;
    }
    void fail_later(std::int64_t sent, std::function<void()> f) {
        loop_.at(sent + std::max(s_.sync_delay_ms, s_.store_timeout_ms), std::move(f));
    }

    event_loop& loop_;
    state::local_store& inner_;
    const scenario& s_;
    std::int64_t& calls_;
};

struct node {
    room::node_state state;
    std::unique_ptr<link_store> link;
    std::unique_ptr<state::sync_task> sync;
    std::vector<std::unique_ptr<room::worker_state>> workers;
};

// What a visitor's browser holds between requests, beside the record.
struct visitor_state {
    std::optional<cookie::payload> cookie;
    int node = 0;                  // the sticky node (first request's node when spreading)
    std::int64_t give_up_at = -1;  // absolute ms; -1 = waits forever
    std::int64_t pages_left = 0;   // page views still to make once admitted
    std::int64_t browse_end = -1;  // browse range: no page after this (absolute ms)
    int refresh_kind = 0;          // refresh_mix: 0 punctual, 1 late, 2 early
    std::int64_t browse_ms = -1;   // a replayed visitor's browse time; -1: drawn
    // The worker of its connection to each node (-1: none yet). A browser keeps its connection
    // between requests (the daemon keeps an idle one 75 s), and each of the daemon's workers
    // accepts its own connections (SO_REUSEPORT), so all of a visitor's requests to a node
    // reach one worker: its counts move in one worker's deltas, flushed on one timer.
    std::vector<int> worker;
};

class simulation {
  public:
    explicit simulation(const scenario& s) : s_(s), rng_(s.seed), visitors_rng_(s.seed * 7919 + 1) {
        auto cfg = std::make_shared<config::config>();
        config::room r;
        r.id = "sim";
        r.name = s.name;
        r.path = "/";
        r.total_active_users = s.total_active_users;
        r.new_users_per_minute = s.new_users_per_minute;
        r.session_duration = std::chrono::milliseconds{s.session_ms};
        r.refresh_interval = std::chrono::milliseconds{s.refresh_ms};
        r.disable_session_renewal = s.disable_session_renewal;
        r.method = s.method;
        if (s.event) {
            config::event ev;
            ev.name = "event";
            auto tp = [](std::int64_t rel) {
                return config::time_point{std::chrono::milliseconds{epoch_ms + rel}};
            };
            ev.prequeue_start_time = tp(s.event->prequeue_ms);
            ev.event_start_time = tp(s.event->start_ms);
            ev.event_end_time = tp(s.event->end_ms);
            ev.total_active_users = s.event->total_active_users;
            ev.new_users_per_minute = s.event->new_users_per_minute;
            ev.shuffle_at_event_start = s.event->shuffle_at_event_start;
            r.events.push_back(ev);
        }
        cfg->rooms.push_back(r);
        engine_ = std::make_shared<room::engine>(cfg, s.windowing);
        room_ = &engine_->rooms().front();

        double total = 0;
        for (double x : s.node_shares) {
            total += std::max(0.0, x);
        }
        for (double x : s.node_shares) {
            shares_.push_back(total > 0 ? std::max(0.0, x) / total : 1.0);
        }
        out_.store_calls.assign(shares_.size(), 0);
        out_.top_ups.assign(shares_.size(), 0);
        for (std::size_t i = 0; i < shares_.size(); ++i) {
            auto n = std::make_unique<node>();
            n->link = std::make_unique<link_store>(loop_, store_, s_, out_.store_calls[i]);
            state::sync_options o;
            o.node_id = "node-" + std::to_string(i);
            o.interval_ms = s.sync_interval_ms;
            o.node_ttl_ms = 3 * s.sync_interval_ms;
            o.lease_ttl_ms = 2 * s.sync_interval_ms;
            o.top_up_retry_ms = s.top_up_retry_ms >= 0
                                    ? s.top_up_retry_ms
                                    : std::max<std::int64_t>(1, s.sync_interval_ms / 4);
            o.top_up_min = s.top_up_min;
            n->sync = std::make_unique<state::sync_task>(n->state, *n->link, o);
            n->sync->set_engine(engine_);
            for (int w = 0; w < std::max(1, s.workers_per_node); ++w) {
                n->workers.push_back(std::make_unique<room::worker_state>(n->state));
            }
            nodes_.push_back(std::move(n));
        }
    }

    sim_result run() {
        const std::int64_t end = epoch_ms + s_.duration_ms;
        std::uniform_int_distribution<std::int64_t> phase(0, s_.sync_interval_ms - 1);
        // The nodes have been up for a while when the first visitor comes (a gateway is started
        // before traffic reaches it): their start-up (the first node to sync leases the whole
        // room until the others show up) is not part of the measurement.
        const std::int64_t boot = epoch_ms - warmup_ms;
        for (std::size_t n = 0; n < nodes_.size(); ++n) {
            loop_.at(boot + phase(visitors_rng_), [this, n]() { sync_tick(n); });
            for (std::size_t w = 0; w < nodes_[n]->workers.size(); ++w) {
                // Drawn and unused since the workers flush at the sync (below): a seed's crowd
                // stays the one of the tables in bench/README.md.
                (void)phase(visitors_rng_);
            }
        }
        loop_.at(epoch_ms, [this]() { sample_tick(); });
        if (s_.attack.kind != attack_kind::none) {
            loop_.at(epoch_ms + s_.attack.from_ms, [this]() { attack_tick(); });
        }
        schedule_arrivals();
        loop_.run_until(end);
        return std::move(out_);
    }

  private:
    // As the daemon's sync timer: every worker hands its deltas over, then the sync runs.
    void sync_tick(std::size_t n) {
        for (auto& w : nodes_[n]->workers) {
            w->flush();
        }
        nodes_[n]->sync->run_once(loop_.now());
        loop_.at(loop_.now() + s_.sync_interval_ms, [this, n]() { sync_tick(n); });
    }
    // One request of the attacker, on a node and worker of its own random choice (a fresh
    // connection each time), then the next.
    void attack_tick() {
        const std::int64_t now = loop_.now();
        if (s_.attack.to_ms >= 0 && now - epoch_ms >= s_.attack.to_ms) {
            return;
        }
        std::uniform_int_distribution<std::size_t> pick_node(0, nodes_.size() - 1);
        auto& n = *nodes_[pick_node(attack_rng_)];
        std::uniform_int_distribution<std::size_t> pick_worker(0, n.workers.size() - 1);
        room::worker_state& w = *n.workers[pick_worker(attack_rng_)];
        auto ask = [&](const cookie::payload* c) {
            ++out_.attack_requests;
            room::decision d = engine_->decide(*room_, w, c, now, rng_);
            out_.attack_admitted += d.what == room::action::admit ? 1 : 0;
            return d;
        };
        const bool replaying = s_.attack.kind == attack_kind::replay && attack_cookie_;
        if (replaying) {
            ask(&*attack_cookie_);
        } else {
            room::decision d = ask(nullptr);
            if (s_.attack.kind != attack_kind::cookieless && d.what == room::action::queue &&
                d.cookie_changed) {
                const cookie::payload given = d.cookie;
                room::decision back = ask(&given);
                if (s_.attack.kind == attack_kind::replay && back.what == room::action::queue) {
                    attack_cookie_ = back.cookie_changed ? back.cookie : given;
                }
            }
        }
        const auto gap = static_cast<std::int64_t>(1000.0 / std::max(0.01, s_.attack.per_second));
        loop_.at(now + std::max<std::int64_t>(1, gap), [this]() { attack_tick(); });
    }

    void sample_tick() {
        const std::int64_t now = loop_.now();
        room::room_limits l = room_->limits_at(now);
        auto c = store_.counts(room_->id(), l, now);
        std::int64_t waiting = 0;
        for (const auto& [b, k] : c.waiting) {
            waiting += k;
        }
        std::int64_t pooled = 0;
        for (auto& nd : nodes_) {
            pooled += nd->state.pool(room_->id()).available();
        }
        const std::int64_t cap =
            std::max<std::int64_t>(0, std::min(l.total_active_users - c.active,
                                               l.new_users_per_minute - c.admitted_last_minute));
        out_.store_view.push_back({now - epoch_ms, c.active, waiting, c.held,
                                   std::max<std::int64_t>(0, cap - c.held), pooled});
        out_.limits.emplace_back(l.total_active_users, l.new_users_per_minute);
        loop_.at(now + 1000, [this]() { sample_tick(); });
    }

    void schedule_arrivals() {
        if (!s_.replay.empty()) {
            replay_arrivals();
            return;
        }
        // Poisson arrivals with a time-varying rate, by thinning a process at the peak rate.
        const double peak = s_.arrivals.peak();
        if (peak <= 0 && s_.crowd_count == 0) {
            return;
        }
        std::exponential_distribution<double> gap(std::max(peak, 1e-9) / 60'000.0);
        std::uniform_real_distribution<double> u(0.0, 1.0);
        std::exponential_distribution<double> patience(1.0 /
                                                       std::max<double>(1, s_.patience_mean_ms));
        std::discrete_distribution<int> pick(shares_.begin(), shares_.end());
        // A crowd of a fixed size: uniform arrival times over crowd_over, as the harness draws.
        std::vector<double> crowd;
        const double crowd_start =
            s_.crowd_count > 0 && s_.crowd_start_max_ms > s_.crowd_start_min_ms
                ? std::uniform_real_distribution<double>(
                      static_cast<double>(s_.crowd_start_min_ms),
                      static_cast<double>(s_.crowd_start_max_ms))(visitors_rng_)
                : static_cast<double>(s_.crowd_start_min_ms);
        for (std::int64_t i = 0; i < s_.crowd_count; ++i) {
            crowd.push_back(crowd_start + u(visitors_rng_) * static_cast<double>(s_.crowd_over_ms));
        }
        std::sort(crowd.begin(), crowd.end());
        std::size_t next_in_crowd = 0;
        double t = 0;
        while (true) {
            if (s_.crowd_count > 0) {
                if (next_in_crowd == crowd.size()) {
                    break;
                }
                t = crowd[next_in_crowd++];
            } else {
                t += gap(visitors_rng_);
            }
            if (t >= static_cast<double>(s_.duration_ms)) {
                break;
            }
            const auto rel = static_cast<std::int64_t>(t);
            if (s_.crowd_count == 0 && u(visitors_rng_) * peak > s_.arrivals.rate_at(rel)) {
                continue;
            }
            visitor_record rec;
            rec.arrival = rel;
            visitor_state v;
            v.node = pick(visitors_rng_);
            rec.node = v.node;
            if (s_.refresh_mix) {
                const double k = u(visitors_rng_);
                v.refresh_kind = k < s_.refresh_late_share                            ? 1
                                 : k < s_.refresh_late_share + s_.refresh_early_share ? 2
                                                                                      : 0;
                rec.refresh_kind = v.refresh_kind;
            }
            if (u(visitors_rng_) < s_.abandon_share) {
                const double wait =
                    s_.patience_min_ms >= 0
                        ? static_cast<double>(s_.patience_min_ms) +
                              u(visitors_rng_) *
                                  static_cast<double>(s_.patience_max_ms - s_.patience_min_ms)
                        : patience(visitors_rng_);
                v.give_up_at = epoch_ms + rel + static_cast<std::int64_t>(wait);
            }
            if (s_.event) {
                rec.prequeued = rel >= s_.event->prequeue_ms && rel < s_.event->start_ms;
            }
            const std::size_t id = visitors_.size();
            visitors_.push_back(std::move(v));
            out_.visitors.push_back(rec);
            loop_.at(epoch_ms + rel, [this, id]() { request(id); });
        }
    }

    // A crowd given visitor by visitor: only the timing of their requests is drawn.
    void replay_arrivals() {
        std::discrete_distribution<int> pick(shares_.begin(), shares_.end());
        for (const replay_visitor& r : s_.replay) {
            if (r.at_ms >= s_.duration_ms) {
                continue;
            }
            visitor_record rec;
            rec.arrival = r.at_ms;
            visitor_state v;
            v.node = r.node >= 0 ? r.node : pick(visitors_rng_);
            v.refresh_kind = r.refresh_kind;
            v.browse_ms = r.browse_ms;
            if (r.patience_ms >= 0) {
                v.give_up_at = epoch_ms + r.at_ms + r.patience_ms;
            }
            rec.node = v.node;
            rec.refresh_kind = v.refresh_kind;
            const std::size_t id = visitors_.size();
            visitors_.push_back(std::move(v));
            out_.visitors.push_back(rec);
            loop_.at(epoch_ms + r.at_ms, [this, id]() { request(id); });
        }
    }

    int pick_node() {
        std::discrete_distribution<int> pick(shares_.begin(), shares_.end());
        return pick(visitors_rng_);
    }

    void request(std::size_t id) {
        const int n = s_.sticky ? visitors_[id].node : pick_node();
        std::vector<int>& worker = visitors_[id].worker;
        if (worker.empty()) {
            worker.assign(nodes_.size(), -1);
        }
        if (worker[n] < 0) {
            std::uniform_int_distribution<int> w(0,
                                                 static_cast<int>(nodes_[n]->workers.size()) - 1);
            worker[n] = w(visitors_rng_);
        }
        decide(id, n, worker[n], room::attempt::first);
    }

    void decide(std::size_t id, int n, int w, room::attempt at) {
        visitor_state& v = visitors_[id];
        const std::int64_t now = loop_.now();
        ++out_.decisions;
        const cookie::payload* c = v.cookie ? &*v.cookie : nullptr;
        room::decision d = engine_->decide(*room_, *nodes_[n]->workers[w], c, now, rng_, at);
        if (d.what == room::action::wait_for_slots) {
            // As the gateway does: one asynchronous top-up, then the same request again.
            ++out_.top_ups[n];
            // (A second one when another worker's visitor took what the first brought.)
            const auto next = at == room::attempt::first ? room::attempt::after_top_up
                                                         : room::attempt::after_second_top_up;
            nodes_[n]->sync->top_up(room_->id(), now, [this, id, n, w, next](bool brought) {
                // One that brought nothing is the last try, as in the gateway.
                const auto at = brought ? next : room::attempt::after_second_top_up;
                loop_.at(loop_.now(), [this, id, n, w, at]() { decide(id, n, w, at); });
            });
            return;
        }
        if (d.cookie_changed) {
            v.cookie = d.cookie;
        }
        visitor_record& rec = out_.visitors[id];
        const std::int64_t rel = now - epoch_ms;
        switch (d.what) {
            case room::action::admit:
                ++rec.pages;
                on_admit(id, rel);
                break;
            case room::action::queue:
                on_queue(id, n, rel, d);
                break;
            case room::action::reject:
                if (rec.first_queued >= 0) {
                    --waiting_now_;
                }
                rec.rejected = true;
                rec.left = rel;
                break;
            case room::action::pass:
            case room::action::misdirected:  // route only: decide() never answers it
            case room::action::wait_for_slots:
                break;
        }
    }

    void on_admit(std::size_t id, std::int64_t rel) {
        visitor_state& v = visitors_[id];
        visitor_record& rec = out_.visitors[id];
        if (rec.admitted < 0) {
            if (rec.first_queued >= 0) {
                --waiting_now_;
            }
            rec.admitted = rel;
            if (s_.browse_min_ms >= 0) {
                // The harness's visitors: a page every page_interval ± jitter after the
                // previous one, for U(browse_min, browse_max); the place is held a session
                // after the last page.
                std::uniform_real_distribution<double> browse(
                    static_cast<double>(s_.browse_min_ms), static_cast<double>(s_.browse_max_ms));
                v.browse_end =
                    loop_.now() + (v.browse_ms >= 0
                                       ? v.browse_ms
                                       : static_cast<std::int64_t>(browse(visitors_rng_)));
                rec.session_end = rel + s_.session_ms;
                next_page(id);
                return;
            }
            std::uniform_real_distribution<double> browse(
                0.0, 2.0 * static_cast<double>(s_.browse_mean_ms));
            auto pages = static_cast<std::int64_t>(browse(visitors_rng_)) / s_.page_interval_ms;
            if (s_.disable_session_renewal) {
                pages = std::min(pages, (s_.session_ms - 1) / s_.page_interval_ms);
            }
            v.pages_left = pages;
            rec.session_end = s_.disable_session_renewal
                                  ? rel + s_.session_ms
                                  : rel + pages * s_.page_interval_ms + s_.session_ms;
        } else if (v.browse_end >= 0) {
            rec.session_end = rel + s_.session_ms;
            next_page(id);
            return;
        } else {
            --v.pages_left;
        }
        if (v.pages_left > 0) {
            loop_.at(loop_.now() + s_.page_interval_ms, [this, id]() { request(id); });
        }
    }

    void next_page(std::size_t id) {
        const double p = static_cast<double>(s_.page_interval_ms);
        std::uniform_real_distribution<double> gap(p * (1.0 - s_.page_jitter),
                                                   p * (1.0 + s_.page_jitter));
        const std::int64_t next = loop_.now() + static_cast<std::int64_t>(gap(visitors_rng_));
        if (next <= visitors_[id].browse_end) {
            loop_.at(next, [this, id]() { request(id); });
        }
    }

    // When a queued visitor comes back after being served `refresh_ms`.
    std::int64_t refresh_delay(const visitor_state& v, std::int64_t refresh_ms) {
        if (!s_.refresh_mix) {
            return refresh_ms;
        }
        const double r = static_cast<double>(refresh_ms);
        auto between = [&](double lo, double hi) {
            return std::uniform_real_distribution<double>(lo, hi)(visitors_rng_);
        };
        switch (v.refresh_kind) {
            case 1:
                return static_cast<std::int64_t>(r * between(1.3, 2.5));
            case 2:
                return static_cast<std::int64_t>(r * between(0.4, 0.9));
            default:
                return static_cast<std::int64_t>(r * between(1.0, 1.05) + between(50, 500));
        }
    }

    void on_queue(std::size_t id, int n, std::int64_t rel, const room::decision& d) {
        visitor_state& v = visitors_[id];
        visitor_record& rec = out_.visitors[id];
        const std::int64_t now = loop_.now();
        if (rec.admitted >= 0) {
            rec.lost_session = true;  // the room forgot a live session: the visitor is gone
            return;
        }
        if (rec.first_queued < 0) {
            // Queueing starts when a visitor is queued while nobody truly waits (a queue left
            // over from an event's prequeue is not an onset).
            if (out_.first_queue_ms < 0 && waiting_now_ == 0 && !d.page.is_event_prequeueing &&
                !d.page.queue_all) {
                out_.first_queue_ms = rel;
                record_first_queue(n);
            }
            ++waiting_now_;
            rec.first_queued = rel;
            rec.first_position = d.page.queue_position;
            if (d.page.wait_time_known) {
                rec.estimate_ms = d.page.wait_time_seconds * 1000;
                rec.estimate_minutes_ms = d.page.wait_time * 60'000;
            }
        }
        rec.queue_answers.emplace_back(rel, d.refresh_seconds);
        rec.queue_waits.push_back(d.page.wait_time_known ? d.page.wait_time_seconds : -1);
        const std::int64_t next =
            now + refresh_delay(v, s_.adaptive_refresh ? d.refresh_seconds * 1000 : s_.refresh_ms);
        if (v.give_up_at >= 0 && next > v.give_up_at) {
            rec.left = std::max(now, v.give_up_at) - epoch_ms;
            --waiting_now_;
            return;
        }
        loop_.at(next, [this, id]() { request(id); });
    }

    void record_first_queue(int n) {
        const std::int64_t now = loop_.now();
        room::room_limits l = room_->limits_at(now);
        auto c = store_.counts(room_->id(), l, now);
        auto& f = out_.first_queue;
        f.node = n;
        f.pool_available = nodes_[n]->state.pool(room_->id()).available();
        f.store_held = c.held;
        f.store_capacity =
            std::max<std::int64_t>(0, std::min(l.total_active_users - c.active,
                                               l.new_users_per_minute - c.admitted_last_minute));
        for (auto& nd : nodes_) {
            f.held_by_node.push_back(nd->state.pool(room_->id()).available());
        }
    }

    const scenario& s_;
    event_loop loop_;
    state::local_store store_;
    std::shared_ptr<room::engine> engine_;
    const room::compiled_room* room_ = nullptr;
    std::vector<double> shares_;
    std::vector<std::unique_ptr<node>> nodes_;
    std::vector<visitor_state> visitors_;
    room::rng rng_;
    std::mt19937_64 visitors_rng_;
    std::mt19937_64 attack_rng_{0xA77AC4};          // its own: the visitors' crowd stays the same
    std::optional<cookie::payload> attack_cookie_;  // replay: the queued cookie it replays
    sim_result out_;
    std::int64_t waiting_now_ = 0;  // visitors queued and neither admitted nor gone
};

}  // namespace

sim_result run(const scenario& s) {
    simulation sim(s);
    return sim.run();
}

}  // namespace waitroom::sim
