#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace waitroom::sim {

namespace {

// Counts of sorted times at or before t.
std::int64_t upto(const std::vector<std::int64_t>& sorted, std::int64_t t) {
    return std::upper_bound(sorted.begin(), sorted.end(), t) - sorted.begin();
}

double median(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    double m = *mid;
    if (v.size() % 2 == 0) {
        m = (m + *std::max_element(v.begin(), mid)) / 2;
    }
    return m;
}

double quantile(std::vector<double> v, double q) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
    return v[i];
}

// Ground truth over time: who holds a session, who waits, who was admitted when.
struct truth {
    std::vector<std::int64_t> admit_at, session_end, queue_from, queue_to;
    std::vector<std::pair<std::int64_t, std::int64_t>> limits;  // per second

    explicit truth(const sim_result& r) : limits(r.limits) {
        for (const auto& v : r.visitors) {
            if (v.admitted >= 0) {
                admit_at.push_back(v.admitted);
                session_end.push_back(v.session_end);
            }
            if (v.first_queued >= 0) {
                queue_from.push_back(v.first_queued);
                queue_to.push_back(v.admitted >= 0 ? v.admitted
                                   : v.left >= 0   ? v.left
                                                   : std::numeric_limits<std::int64_t>::max());
            }
        }
        std::sort(admit_at.begin(), admit_at.end());
        std::sort(session_end.begin(), session_end.end());
        std::sort(queue_from.begin(), queue_from.end());
        std::sort(queue_to.begin(), queue_to.end());
    }
    // A session is [admitted, session_end).
    std::int64_t active(std::int64_t t) const { return upto(admit_at, t) - upto(session_end, t); }
    // Admissions in the 60 s span ending at t: (t − 60 s, t].
    std::int64_t admitted_60s(std::int64_t t) const {
        return upto(admit_at, t) - upto(admit_at, t - 60'000);
    }
    // Waiting is [first queue page, admitted or gave up).
    std::int64_t waiting(std::int64_t t) const { return upto(queue_from, t) - upto(queue_to, t); }
    std::pair<double, double> limits_at(std::int64_t t) const {
        if (limits.empty()) {
            return {1, 1};
        }
        auto i =
            std::clamp<std::int64_t>(t / 1000, 0, static_cast<std::int64_t>(limits.size()) - 1);
        const auto& l = limits[static_cast<std::size_t>(i)];
        return {static_cast<double>(std::max<std::int64_t>(1, l.first)),
                static_cast<double>(std::max<std::int64_t>(1, l.second))};
    }
};

bool prequeueing(const scenario& s, std::int64_t t) {
    return s.event && t >= s.event->prequeue_ms && t < s.event->start_ms;
}

// Binary indexed tree for counting inversions.
class fenwick {
  public:
    explicit fenwick(std::size_t n) : t_(n + 1, 0) {}
    void add(std::size_t i) {
        for (++i; i < t_.size(); i += i & (~i + 1)) {
            ++t_[i];
        }
    }
    std::int64_t prefix(std::size_t i) const {  // count of indices < i
        std::int64_t s = 0;
        for (; i > 0; i -= i & (~i + 1)) {
            s += t_[i];
        }
        return s;
    }

  private:
    std::vector<std::int64_t> t_;
};

std::optional<double> fifo_inversions(const scenario& s, const sim_result& r, std::int64_t W) {
    std::vector<std::pair<std::int64_t, std::int64_t>> adm;  // (admitted, arrival window)
    for (const auto& v : r.visitors) {
        if (v.admitted < 0) {
            continue;
        }
        // Windows are counted in halves so that a shuffled event's prequeued visitors (shuffled
        // on purpose) tie among themselves yet stay ahead of every later arrival, as the room
        // queues them: also of those in the start's own window, who tied with them before.
        std::int64_t w = 2 * (v.arrival / W) + 1;
        if (v.prequeued && s.event && s.event->shuffle_at_event_start) {
            w = 2 * (s.event->start_ms / W);
        }
        adm.emplace_back(v.admitted, w);
    }
    if (adm.size() < 2) {
        return std::nullopt;
    }
    std::sort(adm.begin(), adm.end());
    std::vector<std::int64_t> windows;
    for (const auto& a : adm) {
        windows.push_back(a.second);
    }
    std::sort(windows.begin(), windows.end());
    windows.erase(std::unique(windows.begin(), windows.end()), windows.end());
    auto index = [&](std::int64_t w) {
        return static_cast<std::size_t>(std::lower_bound(windows.begin(), windows.end(), w) -
                                        windows.begin());
    };
    fenwick bit(windows.size());
    std::int64_t seen = 0;
    double inversions = 0;
    for (std::size_t i = 0; i < adm.size();) {
        std::size_t j = i;
        while (j < adm.size() && adm[j].first == adm[i].first) {
            ++j;  // admitted at the same instant: no order between them
        }
        for (std::size_t k = i; k < j; ++k) {
            inversions += static_cast<double>(seen - bit.prefix(index(adm[k].second) + 1));
        }
        for (std::size_t k = i; k < j; ++k) {
            bit.add(index(adm[k].second));
            ++seen;
        }
        i = j;
    }
    std::map<std::int64_t, double> per_window;
    for (const auto& a : adm) {
        per_window[a.second] += 1;
    }
    const double n = static_cast<double>(adm.size());
    double pairs = n * (n - 1) / 2;
    for (const auto& [w, k] : per_window) {
        pairs -= k * (k - 1) / 2;
    }
    if (pairs <= 0) {
        return std::nullopt;
    }
    return inversions / pairs;
}

std::string fmt_pct(std::optional<double> v, int digits = 2) {
    if (!v) {
        return "-";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f%%", digits, *v * 100);
    return buf;
}

std::string pad(const std::string& s, std::size_t w) {
    return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

nlohmann::json opt(std::optional<double> v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

metrics compute(const scenario& s, const sim_result& r) {
    metrics m;
    truth t(r);

    double max_active = 0;
    double max_rate = 0;
    for (std::int64_t at : t.admit_at) {
        auto [la, lr] = t.limits_at(at);
        max_active = std::max(max_active, static_cast<double>(t.active(at)) / la);
        max_rate = std::max(max_rate, static_cast<double>(t.admitted_60s(at)) / lr);
    }
    m.overshoot_active = max_active - 1;
    m.overshoot_rate = max_rate - 1;

    if (r.first_queue_ms >= 0) {
        auto [la, lr] = t.limits_at(r.first_queue_ms);
        m.queue_onset_utilization =
            std::max(static_cast<double>(t.active(r.first_queue_ms)) / la,
                     static_cast<double>(t.admitted_60s(r.first_queue_ms)) / lr);
    }

    for (std::int64_t now = 0; now < s.duration_ms; now += 1000) {
        m.max_queue = std::max(m.max_queue, t.waiting(now));
    }
    // Idle capacity: the exact time average. Every count is a step function of time that
    // changes only at a record's instants (and the limits each second), so it is integrated
    // between those. Sampling once a second instead caught every arrival window's boundary
    // (whole 10 s), where the store frees the sessions it held a window longer and the
    // free capacity peaks before the next refreshes take it: 0.1-0.2 points too high.
    std::vector<std::int64_t> cuts;
    for (std::int64_t now = 0; now < s.duration_ms; now += 1000) {
        cuts.push_back(now);
    }
    for (const auto* v : {&t.admit_at, &t.session_end, &t.queue_from, &t.queue_to}) {
        cuts.insert(cuts.end(), v->begin(), v->end());
    }
    for (std::int64_t a : t.admit_at) {
        cuts.push_back(a + 60'000);  // leaves the sliding minute
    }
    if (s.event) {
        cuts.push_back(s.event->prequeue_ms);
        cuts.push_back(s.event->start_ms);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    cuts.erase(std::remove_if(cuts.begin(), cuts.end(),
                              [&](std::int64_t c) { return c < 0 || c >= s.duration_ms; }),
               cuts.end());
    cuts.push_back(s.duration_ms);
    double idle_sum = 0;
    double idle_ms = 0;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::int64_t now = cuts[i];
        if (t.waiting(now) == 0 || prequeueing(s, now)) {
            continue;
        }
        auto [la, lr] = t.limits_at(now);
        double free = std::min((la - static_cast<double>(t.active(now))) / la,
                               (lr - static_cast<double>(t.admitted_60s(now))) / lr);
        const auto span = static_cast<double>(cuts[i + 1] - now);
        idle_sum += std::max(0.0, free) * span;
        idle_ms += span;
    }
    if (idle_ms > 0) {
        m.idle_capacity_while_queued = idle_sum / idle_ms;
    }

    m.fifo_inversions = fifo_inversions(s, r, s.windowing.window_ms);
    m.fifo_inversions_minutes = fifo_inversions(s, r, 60'000);

    std::vector<double> errors, biases, waits, minute_errors, minute_biases;
    for (const auto& v : r.visitors) {
        ++m.arrivals;
        m.admitted += v.admitted >= 0;
        m.queued += v.first_queued >= 0;
        m.rejected += v.rejected;
        m.abandoned += v.left >= 0 && !v.rejected;
        m.lost_sessions += v.lost_session;
        m.still_waiting += v.first_queued >= 0 && v.admitted < 0 && v.left < 0;
        if (v.first_queued >= 0 && v.admitted >= 0) {
            const double actual = static_cast<double>(v.admitted - v.first_queued);
            waits.push_back(actual / 1000);
            if (v.estimate_ms >= 0 && actual > 0) {
                const double est = static_cast<double>(v.estimate_ms);
                errors.push_back(std::abs(est - actual) / actual);
                biases.push_back((est - actual) / actual);
            }
            if (v.estimate_minutes_ms >= 0 && actual > 0) {
                const double est = static_cast<double>(v.estimate_minutes_ms);
                minute_errors.push_back(std::abs(est - actual) / actual);
                minute_biases.push_back((est - actual) / actual);
            }
        }
    }
    if (!errors.empty()) {
        m.eta_error_median = median(errors);
        m.eta_bias_median = median(biases);
    }
    if (!minute_errors.empty()) {
        m.eta_error_minutes_median = median(minute_errors);
        m.eta_bias_minutes_median = median(minute_biases);
    }
    m.wait_median_s = median(waits);
    m.wait_p95_s = quantile(waits, 0.95);

    const double minutes = static_cast<double>(s.duration_ms) / 60'000.0;
    for (std::size_t i = 0; i < r.store_calls.size(); ++i) {
        double c = static_cast<double>(r.store_calls[i]) / minutes;
        m.store_calls_per_minute.push_back(c);
        m.store_calls_per_node_minute = std::max(m.store_calls_per_node_minute, c);
        m.top_ups += r.top_ups[i];
    }
    m.decisions = r.decisions;
    return m;
}

nlohmann::json to_json(const scenario& s, const metrics& m) {
    nlohmann::json j;
    j["name"] = s.name;
    j["description"] = s.description;
    j["nodes"] = s.node_shares.size();
    j["duration_s"] = s.duration_ms / 1000;
    j["limits"] = {{"total_active_users", s.total_active_users},
                   {"new_users_per_minute", s.new_users_per_minute}};
    j["metrics"] = {
        {"overshoot_active", m.overshoot_active},
        {"overshoot_rate", m.overshoot_rate},
        {"queue_onset_utilization", opt(m.queue_onset_utilization)},
        {"idle_capacity_while_queued", opt(m.idle_capacity_while_queued)},
        {"fifo_inversions", opt(m.fifo_inversions)},
        {"fifo_inversions_60s", opt(m.fifo_inversions_minutes)},
        {"eta_error_median", opt(m.eta_error_median)},
        {"store_calls_per_node_minute", m.store_calls_per_node_minute},
        {"store_calls_per_minute_by_node", m.store_calls_per_minute},
    };
    auto le = [](std::optional<double> v, double lim) {
        return v ? nlohmann::json(*v <= lim) : nlohmann::json(nullptr);
    };
    j["targets_met"] = {
        {"overshoot_active", m.overshoot_active <= targets::overshoot},
        {"overshoot_rate", m.overshoot_rate <= targets::overshoot},
        {"queue_onset_utilization",
         m.queue_onset_utilization ? nlohmann::json(*m.queue_onset_utilization >= targets::onset)
                                   : nlohmann::json(nullptr)},
        {"idle_capacity_while_queued", le(m.idle_capacity_while_queued, targets::idle)},
        {"fifo_inversions", le(m.fifo_inversions, targets::fifo)},
        {"eta_error_median", le(m.eta_error_median, targets::eta)},
    };
    j["counts"] = {{"arrivals", m.arrivals},
                   {"admitted", m.admitted},
                   {"queued", m.queued},
                   {"abandoned", m.abandoned},
                   {"rejected", m.rejected},
                   {"still_waiting", m.still_waiting},
                   {"lost_sessions", m.lost_sessions},
                   {"max_queue", m.max_queue},
                   {"top_ups", m.top_ups},
                   {"decisions", m.decisions}};
    j["waits"] = {{"median_s", m.wait_median_s},
                  {"p95_s", m.wait_p95_s},
                  {"eta_bias_median", opt(m.eta_bias_median)},
                  {"eta_error_minutes_median", opt(m.eta_error_minutes_median)},
                  {"eta_bias_minutes_median", opt(m.eta_bias_minutes_median)}};
    return j;
}

nlohmann::json visitors_json(const scenario& s, const sim_result& r) {
    static const char* const kinds[] = {"punctual", "late", "early"};
    auto sec = [](std::int64_t ms) {
        return ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(static_cast<double>(ms) / 1000.0);
    };
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t i = 0; i < r.visitors.size(); ++i) {
        const visitor_record& v = r.visitors[i];
        nlohmann::json answers = nlohmann::json::array();
        for (const auto& [t, refresh] : v.queue_answers) {
            answers.push_back({static_cast<double>(t) / 1000.0, refresh});
        }
        nlohmann::json waits = nlohmann::json::array();
        for (std::int64_t w : v.queue_waits) {
            waits.push_back(w < 0 ? nlohmann::json(nullptr) : nlohmann::json(w));
        }
        out.push_back(
            {{"vid", i},
             {"arrival", static_cast<double>(v.arrival) / 1000.0},
             {"node", v.node},
             {"kind", s.refresh_mix ? kinds[std::clamp(v.refresh_kind, 0, 2)] : "punctual"},
             {"first_q", sec(v.first_queued)},
             {"wait_s",
              v.estimate_ms < 0 ? nlohmann::json(nullptr) : nlohmann::json(v.estimate_ms / 1000)},
             {"pos",
              v.first_queued < 0 ? nlohmann::json(nullptr) : nlohmann::json(v.first_position)},
             {"admit", sec(v.admitted)},
             {"last", sec(v.session_end < 0 ? -1 : v.session_end - s.session_ms)},
             {"pages", v.pages},
             {"gave_up", v.rejected ? nlohmann::json(nullptr) : sec(v.left)},
             {"lost", v.lost_session},
             {"queue_answers", std::move(answers)},
             {"queue_waits", std::move(waits)}});
    }
    return out;
}

nlohmann::json diagnostics(const sim_result& r) {
    nlohmann::json j;
    if (r.attack_requests > 0) {
        j["attack"] = {{"requests", r.attack_requests}, {"admitted", r.attack_admitted}};
    }
    const auto& f = r.first_queue;
    if (r.first_queue_ms >= 0) {
        j["first_queue"] = {{"at_s", static_cast<double>(r.first_queue_ms) / 1000.0},
                            {"node", f.node},
                            {"pool_available", f.pool_available},
                            {"store_held", f.store_held},
                            {"store_capacity", f.store_capacity},
                            {"pool_by_node", f.held_by_node}};
    }
    // Where the free capacity sits while visitors wait (seconds when the store counts anyone
    // waiting): in the nodes' pools, or unheld in the store (only a top-up reaches it).
    double pooled = 0;
    double unheld = 0;
    std::int64_t n = 0;
    for (const auto& sm : r.store_view) {
        if (sm.waiting > 0) {
            pooled += static_cast<double>(sm.pooled);
            unheld += static_cast<double>(sm.unheld);
            ++n;
        }
    }
    if (n > 0) {
        j["while_waiting"] = {{"seconds", n},
                              {"pooled_mean", pooled / static_cast<double>(n)},
                              {"unheld_mean", unheld / static_cast<double>(n)}};
    }
    j["store_calls_by_node"] = r.store_calls;
    j["top_ups_by_node"] = r.top_ups;
    return j;
}

std::string table(const std::vector<std::pair<scenario, metrics>>& rows) {
    std::ostringstream o;
    const std::vector<std::pair<std::string, std::size_t>> cols = {
        {"scenario", 18},  {"overshoot_act", 14}, {"overshoot_rate", 15}, {"onset", 9},
        {"idle", 8},       {"fifo_inv", 9},       {"eta_err", 9},         {"calls/node/min", 15},
        {"arrivals", 9},   {"admitted", 9},       {"queued", 7},          {"abandoned", 10},
        {"max_queue", 10}, {"wait_p50_s", 11}};
    for (std::size_t i = 0; i < cols.size(); ++i) {
        o << (i == 0 ? cols[i].first + std::string(cols[i].second - cols[i].first.size(), ' ')
                     : pad(cols[i].first, cols[i].second));
    }
    o << '\n';
    auto mark = [](std::string v, bool miss) { return miss ? v + "*" : v + " "; };
    for (const auto& [s, m] : rows) {
        std::string name = s.name.size() > 17 ? s.name.substr(0, 17) : s.name;
        o << name << std::string(18 - name.size(), ' ');
        o << pad(mark(fmt_pct(m.overshoot_active), m.overshoot_active > targets::overshoot), 14);
        o << pad(mark(fmt_pct(m.overshoot_rate), m.overshoot_rate > targets::overshoot), 15);
        o << pad(mark(fmt_pct(m.queue_onset_utilization, 1),
                      m.queue_onset_utilization && *m.queue_onset_utilization < targets::onset),
                 9);
        o << pad(
            mark(fmt_pct(m.idle_capacity_while_queued, 1),
                 m.idle_capacity_while_queued && *m.idle_capacity_while_queued > targets::idle),
            8);
        o << pad(mark(fmt_pct(m.fifo_inversions, 2),
                      m.fifo_inversions && *m.fifo_inversions > targets::fifo),
                 9);
        o << pad(mark(fmt_pct(m.eta_error_median, 0),
                      m.eta_error_median && *m.eta_error_median > targets::eta),
                 9);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", m.store_calls_per_node_minute);
        o << pad(buf, 15);
        o << pad(std::to_string(m.arrivals), 9) << pad(std::to_string(m.admitted), 9)
          << pad(std::to_string(m.queued), 7) << pad(std::to_string(m.abandoned), 10)
          << pad(std::to_string(m.max_queue), 10);
        std::snprintf(buf, sizeof buf, "%.0f", m.wait_median_s);
        o << pad(buf, 11) << '\n';
    }
    o << "targets: overshoot <= 1%, onset >= 97%, idle <= 3%, fifo_inv <= 0.5%, eta_err <= 25%;"
         " * = missed, - = not applicable\n";
    return o.str();
}

namespace {

// min / median / max of one metric over the seeds that report it.
struct spread {
    std::optional<double> lo, mid, hi;
};

template <class F>
spread spread_of(const std::vector<metrics>& runs, F get) {
    std::vector<double> v;
    for (const auto& m : runs) {
        if (std::optional<double> x = get(m)) {
            v.push_back(*x);
        }
    }
    if (v.empty()) {
        return {};
    }
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return {*lo, median(v), *hi};
}

struct seed_metric {
    const char* name;
    std::function<std::optional<double>(const metrics&)> get;
    int digits;
    bool higher_is_better;  // onset: the worst seed is the lowest
    double target;
    bool percent;
};

const std::vector<seed_metric>& seed_metrics() {
    static const std::vector<seed_metric> v = {
        {"overshoot_act", [](const metrics& m) { return std::optional(m.overshoot_active); }, 2,
         false, targets::overshoot, true},
        {"overshoot_rate", [](const metrics& m) { return std::optional(m.overshoot_rate); }, 2,
         false, targets::overshoot, true},
        {"onset", [](const metrics& m) { return m.queue_onset_utilization; }, 1, true,
         targets::onset, true},
        {"idle", [](const metrics& m) { return m.idle_capacity_while_queued; }, 2, false,
         targets::idle, true},
        {"fifo_inv", [](const metrics& m) { return m.fifo_inversions; }, 2, false, targets::fifo,
         true},
        {"eta_err", [](const metrics& m) { return m.eta_error_median; }, 1, false, targets::eta,
         true},
        {"calls/node/min",
         [](const metrics& m) { return std::optional(m.store_calls_per_node_minute); }, 0, false,
         1e300, false},
    };
    return v;
}

std::string fmt_num(double v, int digits, bool percent) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, percent ? v * 100 : v);
    return buf;
}

}  // namespace

std::string seed_table(const std::vector<std::pair<scenario, std::vector<metrics>>>& rows) {
    std::ostringstream o;
    const auto& ms = seed_metrics();
    const std::size_t name_w = 18;
    const std::size_t col_w = 25;
    o << "scenario" << std::string(name_w - 8, ' ') << pad("seeds", 6);
    for (const auto& m : ms) {
        o << ' ' << pad(std::string(m.name) + (m.percent ? " %" : ""), col_w);
    }
    o << '\n';
    for (const auto& [s, runs] : rows) {
        std::string name = s.name.size() > name_w - 1 ? s.name.substr(0, name_w - 1) : s.name;
        o << name << std::string(name_w - name.size(), ' ') << pad(std::to_string(runs.size()), 6);
        for (const auto& m : ms) {
            spread sp = spread_of(runs, m.get);
            if (!sp.mid) {
                o << ' ' << pad("- ", col_w);
                continue;
            }
            bool miss = m.higher_is_better ? *sp.lo < m.target : *sp.hi > m.target;
            std::string cell = fmt_num(*sp.lo, m.digits, m.percent) + " / " +
                               fmt_num(*sp.mid, m.digits, m.percent) + " / " +
                               fmt_num(*sp.hi, m.digits, m.percent) + (miss ? "*" : " ");
            o << ' ' << pad(cell, col_w);
        }
        o << '\n';
    }
    o << "min / median / max over the seeds; targets: overshoot <= 1%, onset >= 97%, idle <= 3%,"
         " fifo_inv <= 0.5%, eta_err <= 25%; * = the worst seed misses, - = not applicable\n";
    return o.str();
}

nlohmann::json seed_summary(const scenario& s, const std::vector<metrics>& runs) {
    nlohmann::json j;
    j["name"] = s.name;
    j["seeds"] = runs.size();
    for (const auto& m : seed_metrics()) {
        spread sp = spread_of(runs, m.get);
        j["metrics"][m.name] = {{"min", opt(sp.lo)}, {"median", opt(sp.mid)}, {"max", opt(sp.hi)}};
        if (m.target < 1e300) {
            j["targets_met"][m.name] =
                sp.mid
                    ? nlohmann::json(m.higher_is_better ? *sp.lo >= m.target : *sp.hi <= m.target)
                    : nlohmann::json(nullptr);
        }
    }
    return j;
}

std::string plot(const scenario& s, const sim_result& r, const std::string& dir) {
    truth t(r);
    const std::string base = dir + "/" + s.name;
    {
        std::ofstream tsv(base + ".tsv");
        tsv << "# minute\tactive\tlimit_active\twaiting\tadmitted_60s\tlimit_rate\t"
               "store_active\tstore_waiting\n";
        for (const auto& sample : r.store_view) {
            auto [la, lr] = t.limits_at(sample.t);
            tsv << static_cast<double>(sample.t) / 60'000.0 << '\t' << t.active(sample.t) << '\t'
                << la << '\t' << t.waiting(sample.t) << '\t' << t.admitted_60s(sample.t) << '\t'
                << lr << '\t' << sample.active << '\t' << sample.waiting << '\n';
        }
    }
    {
        std::ofstream gp(base + ".gp");
        gp << "set terminal pngcairo size 1200,800 noenhanced\n"
           << "set output '" << base << ".png'\n"
           << "set multiplot layout 2,1 title '" << s.name << ": " << s.description << "'\n"
           << "set grid\nset key outside right\nset xlabel 'minute'\n"
           << "set ylabel 'active users'\n"
           << "plot '" << base << ".tsv' using 1:2 with lines lw 2 title 'active (truth)', "
           << "'' using 1:3 with lines dt 2 lw 2 title 'total_active_users', "
           << "'' using 1:7 with lines title 'active (store)'\n"
           << "set ylabel 'visitors'\n"
           << "plot '" << base << ".tsv' using 1:4 with lines lw 2 title 'queue length (truth)', "
           << "'' using 1:8 with lines title 'queue length (store)', "
           << "'' using 1:5 with lines lw 2 title 'admitted in last 60 s', "
           << "'' using 1:6 with lines dt 2 lw 2 title 'new_users_per_minute'\n"
           << "unset multiplot\n";
    }
    std::string cmd = "gnuplot '" + base + ".gp' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) {
        // pngcairo may be missing from gnuplot-nox builds: fall back to the plain png terminal.
        std::string fallback = "sed -i 's/^set terminal pngcairo/set terminal png/' '" + base +
                               ".gp' && gnuplot '" + base + ".gp' 2>/dev/null";
        if (std::system(fallback.c_str()) != 0) {
            return "";
        }
    }
    return base + ".png";
}

}  // namespace waitroom::sim
