#pragma once
// The health of the origin's servers, node-wide: which of them take new requests. Written by
// every worker's requests (passive health: failures in a row eject a server for a back-off that
// doubles, as Envoy's outlier detection does) and by the node's health checks (origin_monitor);
// read on the request path as a few relaxed atomic loads. No Asio: time is an argument.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/metrics/metrics.hpp"
#include "waitroom/room/origin_gate.hpp"

namespace waitroom::gateway {

using health_clock = std::chrono::steady_clock;

// When failures in a row take a server out, and for how long (origin.eject_after, eject_time,
// max_eject_time).
struct ejection_rules {
    unsigned eject_after = 5;  // 0 = never
    std::chrono::milliseconds base{10'000};
    std::chrono::milliseconds max{300'000};
};

// What went wrong with one request to a server.
enum class server_failure {
    connect,       // no connection (refused, unreachable, TLS handshake, connect timeout)
    timeout,       // no response head within origin.timeout
    server_error,  // a 5xx answer
};

// One server's standing, shared by every worker. Lock-free; any thread.
class server_health {
  public:
    // Takes new requests at `now`: not ejected, and passing its health checks (if any).
    bool available(health_clock::time_point now) const { return checks_pass() && !ejected(now); }
    bool ejected(health_clock::time_point now) const {
        return now.time_since_epoch().count() < ejected_until_.load(order);
    }
    health_clock::time_point ejected_until() const {
        return health_clock::time_point(health_clock::duration(ejected_until_.load(order)));
    }
    std::uint64_t ejections() const { return ejections_.load(order); }

    // The health checks' verdict (true until they say otherwise).
    bool checks_pass() const { return checks_pass_.load(order); }
    void set_checks_pass(bool v) { checks_pass_.store(v, order); }

    // An answer below 500: the streak of failures ends, and a server back from an ejection has
    // proved itself (its next ejection starts from the base time again). An answer during an
    // ejection (a request sent while no server took requests) ends it. True when this ended
    // an ejection, or marked the end of one that had run out.
    bool record_success() {
        if (failures_.load(order) == 0 && !probation_.load(order) &&
            ejected_until_.load(order) == 0) {
            return false;  // the usual case: loads only, no write to a shared line
        }
        failures_.store(0, order);
        hard_.store(false, order);
        probation_.store(false, order);
        level_.store(0, order);
        return ejected_until_.exchange(0, order) != 0;
    }

    // A failure at `now`. True when it ejected the server: after `rules.eject_after` in a row,
    // or at once while it is back from an ejection without an answer since. A streak of 5xx
    // answers alone does not eject it when `others_available` is false: a server that answers,
    // even with errors, is better than none. The first ejection lasts `rules.base`, each one in
    // a row twice the one before, up to `rules.max`.
    bool record_failure(server_failure f, const ejection_rules& rules, bool others_available,
                        health_clock::time_point now);

  private:
    static constexpr auto order = std::memory_order_relaxed;

    std::atomic<unsigned> failures_{0};           // in a row, since the last answer or ejection
    std::atomic<bool> hard_{false};               // the streak holds a connect failure or timeout
    std::atomic<bool> probation_{false};          // back from an ejection, no answer since
    std::atomic<unsigned> level_{0};              // ejections in a row: the back-off's doublings
    std::atomic<std::int64_t> ejected_until_{0};  // health_clock ticks
    std::atomic<std::uint64_t> ejections_{0};
    std::atomic<bool> checks_pass_{true};
};

// The node's health of every server it has been configured with, by URL, and the gate the room
// engine reads. Outlives every config: a reload keeps what is known of a server it still names.
class origin_health {
  public:
    origin_health() : gate_(std::make_shared<room::origin_gate>()) {}

    // The entry of `url`, created on first use; it never moves (takes a lock: config time only).
    server_health& server(const std::string& url);

    const std::shared_ptr<room::origin_gate>& gate() const { return gate_; }

    // Called (from any thread) when a worker ejected a server: the node's monitor re-reads the
    // servers then. Set before any worker starts.
    void on_change(std::function<void()> f) { on_change_ = std::move(f); }
    void changed() const {
        if (on_change_) {
            on_change_();
        }
    }

  private:
    std::mutex mu_;
    std::map<std::string, std::unique_ptr<server_health>, std::less<>> servers_;
    std::shared_ptr<room::origin_gate> gate_;
    std::function<void()> on_change_;
};

// The servers of one config's origin, with their health and metrics. Immutable; shared by the
// runtime built from that config, the workers and the monitor.
class origin_group {
  public:
    struct member {
        config::origin_server server;
        server_health* health = nullptr;                          // in the node's origin_health
        const metrics::origin_server_metrics* metrics = nullptr;  // null without metrics
    };

    // `m` (optional) outlives the group.
    origin_group(const config::origin& o, std::shared_ptr<origin_health> health,
                 metrics::metric_set* m);

    const std::vector<member>& members() const { return members_; }
    const ejection_rules& rules() const { return rules_; }
    const config::health_check& checks() const { return checks_; }
    origin_health& health() const { return *health_; }

    // Whether a member other than `except` takes new requests at `now`.
    bool any_available(health_clock::time_point now, const server_health* except = nullptr) const;

    // Opens the gate when a member takes new requests at `now`, else closes it. Returns it.
    bool refresh_gate(health_clock::time_point now) const;

    // An answer below 500 from `m`; one that ends an ejection opens the gate at once.
    void record_success(const member& m) const;

    // A failed request to `m`; true when it ejected `m`. An ejection closes the gate at once
    // when it was the last server, and tells the monitor.
    bool record_failure(const member& m, server_failure f, health_clock::time_point now) const;

  private:
    std::shared_ptr<origin_health> health_;
    std::vector<member> members_;
    ejection_rules rules_;
    config::health_check checks_;
};

}  // namespace waitroom::gateway
