#include "scenario.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "waitroom/config/values.hpp"

namespace waitroom::sim {

namespace {

constexpr std::int64_t sec = 1'000;
constexpr std::int64_t minute = 60'000;

// A step curve: base, then `peak` during [at, at + length), then `after`.
arrival_curve spike(double base, double peak, std::int64_t at, std::int64_t length, double after) {
    arrival_curve c;
    c.points = {
        {0, base}, {at - 1, base}, {at, peak}, {at + length - 1, peak}, {at + length, after}};
    return c;
}

scenario base(std::string name, std::string description) {
    scenario s;
    s.name = std::move(name);
    s.description = std::move(description);
    return s;
}

// A store reached over the network (Redis on the LAN): a round trip per call, and the daemon's
// top-up retry for a networked store.
void networked(scenario& s) {
    s.sync_delay_ms = 20;
}

}  // namespace

double arrival_curve::rate_at(std::int64_t t) const {
    if (points.empty()) {
        return 0;
    }
    if (t <= points.front().first) {
        return points.front().second;
    }
    for (std::size_t i = 1; i < points.size(); ++i) {
        if (t <= points[i].first) {
            const auto& [t0, r0] = points[i - 1];
            const auto& [t1, r1] = points[i];
            if (t1 == t0) {
                return r1;
            }
            double f = static_cast<double>(t - t0) / static_cast<double>(t1 - t0);
            return r0 + (r1 - r0) * f;
        }
    }
    return points.back().second;
}

double arrival_curve::peak() const {
    double p = 0;
    for (const auto& pt : points) {
        p = std::max(p, pt.second);
    }
    return p;
}

std::vector<std::string> builtin_names() {
    return {"spike-single", "spike-4-nodes", "ramp",         "spike-after-quiet",
            "abandon-30",   "outage-30s",    "event-shuffle"};
}

namespace {

// A small room (3 places, 20 s sessions, 10 s refresh) with a steady trickle of visitors over
// 10 minutes, as the queue-count attacks against the daemon run it: `method`, and `attack` at
// 25 requests a second from 1:00 to 9:00 (none: the same crowd without it).
scenario attacked(std::string name, config::queueing_method method, attack_kind attack) {
    auto s = base(name,
                  "1 node, 2 workers; room 3 / 20 s sessions / 10 s refresh, 12/min for "
                  "10 min; an attacker from 1:00 to 9:00 at 25 requests/s");
    s.duration_ms = 10 * minute;
    s.total_active_users = 3;
    s.new_users_per_minute = 1000;
    s.session_ms = 20 * sec;
    s.refresh_ms = 10 * sec;
    s.browse_mean_ms = 10 * sec;
    s.page_interval_ms = 5 * sec;
    s.method = method;
    s.arrivals.points = {{0, 12}};
    s.attack = {attack, 25, 1 * minute, 9 * minute};
    return s;
}

}  // namespace

// The attacker's scenarios, each beside its calm twin (the same crowd, no attacker): the
// visitors' waits with and without it.
std::vector<std::string> attack_names() {
    return {"flood-fifo",        "flood-fifo-calm",  "flood-random",
            "flood-random-calm", "back-once-random", "replay-fifo"};
}

std::optional<scenario> attack_builtin(const std::string& name) {
    using config::queueing_method;
    if (name == "flood-fifo") {
        return attacked(name, queueing_method::fifo, attack_kind::cookieless);
    }
    if (name == "flood-fifo-calm") {
        return attacked(name, queueing_method::fifo, attack_kind::none);
    }
    if (name == "flood-random") {
        return attacked(name, queueing_method::random, attack_kind::cookieless);
    }
    if (name == "flood-random-calm") {
        return attacked(name, queueing_method::random, attack_kind::none);
    }
    if (name == "back-once-random") {
        return attacked(name, queueing_method::random, attack_kind::back_once);
    }
    if (name == "replay-fifo") {
        return attacked(name, queueing_method::fifo, attack_kind::replay);
    }
    return std::nullopt;
}

std::optional<scenario> builtin(const std::string& name) {
    if (auto a = attack_builtin(name)) {
        return a;
    }
    if (name == "spike-single") {
        auto s = base(name, "1 node; 50/min, then 2000/min (10x new_users_per_minute) for 3 min");
        s.arrivals = spike(50, 2000, 10 * minute, 3 * minute, 50);
        s.plot = true;
        return s;
    }
    if (name == "spike-4-nodes") {
        auto s = base(name, "4 nodes 70/20/5/5, sticky, 20 ms store; the 10x spike");
        s.node_shares = {70, 20, 5, 5};
        networked(s);
        s.arrivals = spike(50, 2000, 10 * minute, 3 * minute, 50);
        s.plot = true;
        return s;
    }
    if (name == "ramp") {
        auto s = base(name,
                      "2 nodes 50/50 spreading; 0 -> 300/min over 45 min, active limit "
                      "1000 binds near 140/min");
        s.total_active_users = 1000;
        s.new_users_per_minute = 300;
        s.node_shares = {50, 50};
        s.sticky = false;
        networked(s);
        s.arrivals.points = {{0, 0}, {45 * minute, 300}};
        s.plot = true;
        return s;
    }
    if (name == "spike-after-quiet") {
        auto s = base(name, "4 nodes 70/20/5/5; 2/min for 30 min, then 2000/min for 3 min");
        s.node_shares = {70, 20, 5, 5};
        networked(s);
        s.arrivals = spike(2, 2000, 30 * minute, 3 * minute, 20);
        s.plot = true;
        return s;
    }
    if (name == "abandon-30") {
        auto s = base(name, "1 node; the 10x spike, 30% of queued visitors give up (mean 3 min)");
        s.arrivals = spike(50, 2000, 10 * minute, 3 * minute, 50);
        s.abandon_share = 0.3;
        s.patience_mean_ms = 3 * minute;
        s.plot = true;
        return s;
    }
    if (name == "outage-30s") {
        auto s = base(name, "4 nodes 70/20/5/5; the 10x spike with a 30 s store outage at 11:00");
        s.node_shares = {70, 20, 5, 5};
        networked(s);
        s.arrivals = spike(50, 2000, 10 * minute, 3 * minute, 50);
        s.outages.push_back({11 * minute, 30 * sec});
        s.plot = true;
        return s;
    }
    if (name == "event-shuffle") {
        auto s = base(name,
                      "2 nodes spreading; room 500/100, event 2000/300 at 20:00 with "
                      "prequeue from 10:00 (600/min) and shuffle");
        s.total_active_users = 500;
        s.new_users_per_minute = 100;
        s.node_shares = {50, 50};
        s.sticky = false;
        networked(s);
        event_spec ev;
        ev.prequeue_ms = 10 * minute;
        ev.start_ms = 20 * minute;
        ev.end_ms = 60 * minute;
        ev.total_active_users = 2000;
        ev.new_users_per_minute = 300;
        ev.shuffle_at_event_start = true;
        s.event = ev;
        s.arrivals = spike(20, 600, 10 * minute, 10 * minute, 100);
        s.plot = true;
        return s;
    }
    if (name == "smoke-quiet") {
        auto s = base(name, "1 node; 20/min against limits 2000/200: nobody queues");
        s.duration_ms = 10 * minute;
        s.arrivals.points = {{0, 20}};
        return s;
    }
    if (name == "smoke-spike") {
        auto s = base(name, "2 nodes 70/30; 40/min, then 400/min for 1 min against 1000/100");
        s.duration_ms = 10 * minute;
        s.total_active_users = 1000;
        s.new_users_per_minute = 100;
        s.node_shares = {70, 30};
        s.arrivals = spike(40, 400, 2 * minute, 1 * minute, 40);
        return s;
    }
    return std::nullopt;
}

// ---- YAML --------------------------------------------------------------------------------

namespace {

struct load_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string where(const YAML::Node& n) {
    auto m = n.Mark();
    return std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

std::int64_t dur(const YAML::Node& n, const std::string& key) {
    auto d = config::parse_duration(n.as<std::string>());
    if (!d) {
        throw load_error(where(n) + ": " + key + ": expected a duration such as 90s or 5m");
    }
    return d->count();
}

void check_keys(const YAML::Node& n, const std::string& what,
                std::initializer_list<const char*> allowed) {
    if (!n.IsMap()) {
        throw load_error(where(n) + ": " + what + ": expected a mapping");
    }
    for (const auto& kv : n) {
        auto k = kv.first.as<std::string>();
        if (std::find_if(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }) ==
            allowed.end()) {
            throw load_error(where(kv.first) + ": " + what + "." + k + ": unknown key");
        }
    }
}

arrival_curve load_arrivals(const YAML::Node& n) {
    check_keys(n, "visitors.arrivals",
               {"shape", "rate", "base", "peak", "at", "length", "after", "from", "to", "start",
                "points"});
    auto num = [&](const char* k, double def) { return n[k] ? n[k].as<double>() : def; };
    auto ms = [&](const char* k, std::int64_t def) {
        return n[k] ? dur(n[k], std::string("visitors.arrivals.") + k) : def;
    };
    arrival_curve c;
    if (n["points"]) {
        for (const auto& p : n["points"]) {
            if (!p.IsSequence() || p.size() != 2) {
                throw load_error(where(p) + ": visitors.arrivals.points: expected [time, rate]");
            }
            c.points.emplace_back(dur(p[0], "visitors.arrivals.points"), p[1].as<double>());
        }
        return c;
    }
    std::string shape = n["shape"] ? n["shape"].as<std::string>() : "steady";
    if (shape == "steady") {
        c.points = {{0, num("rate", 100)}};
    } else if (shape == "ramp") {
        std::int64_t start = ms("start", 0);
        c.points = {{start, num("from", 0)}, {start + ms("length", 45 * minute), num("to", 300)}};
    } else if (shape == "spike" || shape == "spike_after_quiet") {
        double b = num("base", shape == "spike" ? 50 : 2);
        c = spike(b, num("peak", 2000), ms("at", shape == "spike" ? 10 * minute : 30 * minute),
                  ms("length", 3 * minute), num("after", b));
    } else {
        throw load_error(where(n["shape"]) +
                         ": visitors.arrivals.shape: expected steady, ramp, spike or "
                         "spike_after_quiet");
    }
    return c;
}

scenario load_node(const YAML::Node& root, const std::string& stem) {
    check_keys(root, "scenario",
               {"name", "description", "duration", "seed", "plot", "room", "event", "nodes",
                "outages", "visitors", "windowing"});
    scenario s;
    s.name = root["name"] ? root["name"].as<std::string>() : stem;
    s.description = root["description"] ? root["description"].as<std::string>() : "";
    if (root["duration"]) {
        s.duration_ms = dur(root["duration"], "duration");
    }
    if (root["seed"]) {
        s.seed = root["seed"].as<std::uint64_t>();
    }
    if (root["plot"]) {
        s.plot = root["plot"].as<bool>();
    }
    if (auto r = root["room"]) {
        check_keys(r, "room",
                   {"total_active_users", "new_users_per_minute", "session_duration",
                    "refresh_interval", "disable_session_renewal", "queueing_method"});
        if (r["total_active_users"]) {
            s.total_active_users = r["total_active_users"].as<std::uint32_t>();
        }
        if (r["new_users_per_minute"]) {
            s.new_users_per_minute = r["new_users_per_minute"].as<std::uint32_t>();
        }
        if (r["session_duration"]) {
            s.session_ms = dur(r["session_duration"], "room.session_duration");
        }
        if (r["refresh_interval"]) {
            s.refresh_ms = dur(r["refresh_interval"], "room.refresh_interval");
        }
        if (r["disable_session_renewal"]) {
            s.disable_session_renewal = r["disable_session_renewal"].as<bool>();
        }
        if (r["queueing_method"]) {
            auto m = r["queueing_method"].as<std::string>();
            if (m == "fifo") {
                s.method = config::queueing_method::fifo;
            } else if (m == "random") {
                s.method = config::queueing_method::random;
            } else {
                throw load_error(where(r["queueing_method"]) +
                                 ": room.queueing_method: the simulator runs fifo or random");
            }
        }
    }
    if (auto e = root["event"]) {
        check_keys(e, "event",
                   {"prequeue_start", "start", "end", "total_active_users", "new_users_per_minute",
                    "shuffle_at_event_start"});
        event_spec ev;
        ev.start_ms = dur(e["start"], "event.start");
        ev.end_ms = dur(e["end"], "event.end");
        ev.prequeue_ms =
            e["prequeue_start"] ? dur(e["prequeue_start"], "event.prequeue_start") : ev.start_ms;
        if (e["total_active_users"]) {
            ev.total_active_users = e["total_active_users"].as<std::uint32_t>();
        }
        if (e["new_users_per_minute"]) {
            ev.new_users_per_minute = e["new_users_per_minute"].as<std::uint32_t>();
        }
        if (e["shuffle_at_event_start"]) {
            ev.shuffle_at_event_start = e["shuffle_at_event_start"].as<bool>();
        }
        s.event = ev;
    }
    if (auto n = root["nodes"]) {
        check_keys(n, "nodes",
                   {"shares", "workers", "load_balancer", "sync_interval", "sync_delay",
                    "store_timeout", "top_up_retry", "top_up_min"});
        if (n["shares"]) {
            s.node_shares = n["shares"].as<std::vector<double>>();
            if (s.node_shares.empty()) {
                throw load_error(where(n["shares"]) + ": nodes.shares: at least one node");
            }
        }
        if (n["workers"]) {
            s.workers_per_node = std::max(1, n["workers"].as<int>());
        }
        if (n["load_balancer"]) {
            auto lb = n["load_balancer"].as<std::string>();
            if (lb != "sticky" && lb != "spread") {
                throw load_error(where(n["load_balancer"]) +
                                 ": nodes.load_balancer: expected sticky or spread");
            }
            s.sticky = lb == "sticky";
        }
        if (n["sync_interval"]) {
            s.sync_interval_ms =
                std::max<std::int64_t>(1, dur(n["sync_interval"], "nodes.sync_interval"));
        }
        if (n["sync_delay"]) {
            s.sync_delay_ms = dur(n["sync_delay"], "nodes.sync_delay");
        }
        if (n["store_timeout"]) {
            s.store_timeout_ms = dur(n["store_timeout"], "nodes.store_timeout");
        }
        if (n["top_up_min"]) {
            s.top_up_min = std::max<std::int64_t>(1, n["top_up_min"].as<std::int64_t>());
        }
        if (n["top_up_retry"]) {
            s.top_up_retry_ms = dur(n["top_up_retry"], "nodes.top_up_retry");
        }
    }
    if (auto o = root["outages"]) {
        for (const auto& x : o) {
            check_keys(x, "outages[]", {"start", "length"});
            s.outages.push_back(
                {dur(x["start"], "outages[].start"), dur(x["length"], "outages[].length")});
        }
    }
    if (auto v = root["visitors"]) {
        check_keys(v, "visitors",
                   {"arrivals", "browse_time", "page_interval", "abandon_share", "patience",
                    "adaptive_refresh", "crowd", "page_jitter", "refresh_mix", "replay"});
        if (v["arrivals"]) {
            s.arrivals = load_arrivals(v["arrivals"]);
        }
        // A duration, or a [min, max] range of two durations (uniform).
        auto range = [&](const YAML::Node& n, const std::string& key, std::int64_t& lo,
                         std::int64_t& hi) {
            if (n.size() != 2) {
                throw load_error(where(n) + ": " + key + ": expected a duration or [min, max]");
            }
            lo = dur(n[0], key);
            hi = dur(n[1], key);
            if (lo < 0 || hi < lo) {
                throw load_error(where(n) + ": " + key + ": expected 0 <= min <= max");
            }
        };
        if (auto c = v["crowd"]) {
            check_keys(c, "visitors.crowd", {"count", "over", "start"});
            s.crowd_count = std::max<std::int64_t>(0, c["count"].as<std::int64_t>(0));
            s.crowd_over_ms = c["over"] ? dur(c["over"], "visitors.crowd.over") : 0;
            if (c["start"] && c["start"].IsSequence()) {
                range(c["start"], "visitors.crowd.start", s.crowd_start_min_ms,
                      s.crowd_start_max_ms);
            } else if (c["start"]) {
                s.crowd_start_min_ms = s.crowd_start_max_ms =
                    dur(c["start"], "visitors.crowd.start");
                if (s.crowd_start_min_ms < 0) {
                    throw load_error(where(c["start"]) + ": visitors.crowd.start: expected >= 0");
                }
            }
        }
        if (v["browse_time"]) {
            if (v["browse_time"].IsSequence()) {
                range(v["browse_time"], "visitors.browse_time", s.browse_min_ms, s.browse_max_ms);
            } else {
                s.browse_mean_ms = dur(v["browse_time"], "visitors.browse_time");
            }
        }
        if (auto rp = v["replay"]) {
            if (!rp.IsSequence()) {
                throw load_error(where(rp) + ": visitors.replay: expected a list of visitors");
            }
            for (const auto& x : rp) {
                check_keys(x, "visitors.replay[]", {"at", "kind", "browse", "patience", "node"});
                replay_visitor r;
                r.at_ms = dur(x["at"], "visitors.replay[].at");
                if (r.at_ms < 0) {
                    throw load_error(where(x["at"]) + ": visitors.replay[].at: expected >= 0");
                }
                if (x["kind"]) {
                    const auto k = x["kind"].as<std::string>();
                    if (k != "punctual" && k != "late" && k != "early") {
                        throw load_error(where(x["kind"]) +
                                         ": visitors.replay[].kind: expected punctual, late or "
                                         "early");
                    }
                    r.refresh_kind = k == "late" ? 1 : k == "early" ? 2 : 0;
                }
                if (x["browse"]) {
                    r.browse_ms =
                        std::max<std::int64_t>(0, dur(x["browse"], "visitors.replay[].browse"));
                }
                if (x["patience"]) {
                    r.patience_ms =
                        std::max<std::int64_t>(0, dur(x["patience"], "visitors.replay[].patience"));
                }
                if (x["node"]) {
                    r.node = x["node"].as<int>();
                    if (r.node < 0 || static_cast<std::size_t>(r.node) >= s.node_shares.size()) {
                        throw load_error(where(x["node"]) +
                                         ": visitors.replay[].node: no such node (nodes.shares)");
                    }
                }
                s.replay.push_back(r);
            }
        }
        if (v["page_jitter"]) {
            s.page_jitter = std::clamp(v["page_jitter"].as<double>(), 0.0, 0.9);
        }
        if (auto m = v["refresh_mix"]) {
            check_keys(m, "visitors.refresh_mix", {"late", "early"});
            s.refresh_mix = true;
            s.refresh_late_share = std::clamp(m["late"].as<double>(0.0), 0.0, 1.0);
            s.refresh_early_share =
                std::clamp(m["early"].as<double>(0.0), 0.0, 1.0 - s.refresh_late_share);
        }
        if (v["page_interval"]) {
            s.page_interval_ms =
                std::max<std::int64_t>(1000, dur(v["page_interval"], "visitors.page_interval"));
        }
        if (v["abandon_share"]) {
            s.abandon_share = std::clamp(v["abandon_share"].as<double>(), 0.0, 1.0);
        }
        if (v["patience"]) {
            if (v["patience"].IsSequence()) {
                range(v["patience"], "visitors.patience", s.patience_min_ms, s.patience_max_ms);
            } else {
                s.patience_mean_ms = dur(v["patience"], "visitors.patience");
            }
        }
        if (v["adaptive_refresh"]) {
            s.adaptive_refresh = v["adaptive_refresh"].as<bool>();
        }
    }
    if (auto w = root["windowing"]) {
        check_keys(w, "windowing",
                   {"window", "rate_window", "abandon_margin", "min_refresh", "queue_rejoin",
                    "front_hold"});
        if (w["front_hold"]) {
            s.windowing.front_hold_ms = dur(w["front_hold"], "windowing.front_hold");
        }
        if (w["window"]) {
            s.windowing.window_ms = dur(w["window"], "windowing.window");
        }
        if (w["rate_window"]) {
            s.windowing.rate_window_ms = dur(w["rate_window"], "windowing.rate_window");
        }
        if (w["abandon_margin"]) {
            s.windowing.abandon_margin_ms = dur(w["abandon_margin"], "windowing.abandon_margin");
        }
        if (w["min_refresh"]) {
            s.windowing.min_refresh_ms = dur(w["min_refresh"], "windowing.min_refresh");
        }
        if (w["queue_rejoin"]) {
            s.windowing.queue_rejoin_ms = dur(w["queue_rejoin"], "windowing.queue_rejoin");
        }
    }
    if (s.arrivals.points.empty()) {
        s.arrivals.points = {{0, 100}};
    }
    return s;
}

}  // namespace

std::optional<scenario> load_scenario(const std::string& path, std::string& error) {
    std::string stem = path;
    if (auto slash = stem.find_last_of('/'); slash != std::string::npos) {
        stem = stem.substr(slash + 1);
    }
    if (auto dot = stem.find('.'); dot != std::string::npos) {
        stem = stem.substr(0, dot);
    }
    try {
        return load_node(YAML::LoadFile(path), stem);
    } catch (const load_error& e) {
        error = path + ":" + e.what();
    } catch (const YAML::Exception& e) {
        error = path + ": " + e.what();
    }
    return std::nullopt;
}

}  // namespace waitroom::sim
