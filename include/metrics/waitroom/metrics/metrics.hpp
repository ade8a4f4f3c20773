#pragma once
// Prometheus metrics: a registry of counters, gauges and histograms named at startup, with values
// kept per writer slot (one per worker, plus extra slots for the sync task) and summed on scrape,
// and `metric_set`, the named set the gateway, the room engine glue and the sync task bump.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace waitroom::metrics {

class registry;

// One value of one writer slot. Each slot has a single writer in practice; relaxed atomics keep
// a scrape from another thread well-defined at the price of an uncontended add.
using cell = std::atomic<std::int64_t>;

// A monotonic counter. A handle is two words, copied freely; bumping it is an index computation
// and one relaxed add on the caller's own slot: no lock, no string.
class counter {
  public:
    counter() = default;
    void inc(unsigned slot, std::int64_t n = 1) const;
    // The sum over slots now (0 for a default handle). Off the request path: reads every slot.
    std::int64_t value() const;

  private:
    friend class registry;
    counter(registry* r, std::uint32_t cell) : reg_(r), cell_(cell) {}
    registry* reg_ = nullptr;
    std::uint32_t cell_ = 0;
};

// A value that goes up and down. The exposed value is the sum over slots: per-worker gauges
// (open connections) use add/sub on the worker's slot; a node-wide gauge (a room's active users)
// is set from one slot only.
class gauge {
  public:
    gauge() = default;
    void set(unsigned slot, std::int64_t v) const;
    void add(unsigned slot, std::int64_t n) const;
    void sub(unsigned slot, std::int64_t n) const { add(slot, -n); }

  private:
    friend class registry;
    gauge(registry* r, std::uint32_t cell) : reg_(r), cell_(cell) {}
    registry* reg_ = nullptr;
    std::uint32_t cell_ = 0;
};

// A histogram read at one instant: its bucket bounds, the observations in each bucket (not
// cumulative; the last one is +Inf) and their sum.
struct histogram_reading {
    // The family's bounds, shared by every reading of it: a day of per-minute rows would
    // otherwise hold 1,440 copies of each.
    std::shared_ptr<const std::vector<double>> bounds;
    std::vector<std::int64_t> buckets;  // bounds->size() + 1 entries once read
    double sum = 0;

    std::int64_t count() const;
    // The observations made between `earlier` (a reading of the same histogram) and this one.
    histogram_reading since(const histogram_reading& earlier) const;
};

// The q-quantile (0 ≤ q ≤ 1) of a reading, interpolated linearly inside its bucket as
// Prometheus' histogram_quantile does: the lowest bucket starts at 0 when its bound is positive
// (else it is its bound), and a quantile in +Inf is the highest bound. NaN without observations.
double quantile(const histogram_reading& r, double q);
// The mean of the observations (sum / count); NaN without observations.
double mean(const histogram_reading& r);

// Counts observations into fixed buckets (upper bounds in seconds, set at registration; they may
// be negative, for signed values such as an estimate's error). The sum is kept in whole
// nanoseconds so that adds stay integer and exact.
class histogram {
  public:
    histogram() = default;
    void observe(unsigned slot, double seconds) const;
    histogram_reading read() const;  // off the request path: reads every slot

  private:
    friend class registry;
    histogram(registry* r, std::uint32_t first_cell,
              const std::shared_ptr<const std::vector<double>>* bounds)
        : reg_(r), cell_(first_cell), bounds_(bounds) {}
    registry* reg_ = nullptr;
    std::uint32_t cell_ = 0;  // buckets (bounds + +Inf), then the sum in nanoseconds
    // The family's own pointer (families never move): copying a handle, as the request path
    // does, touches no reference count.
    const std::shared_ptr<const std::vector<double>>* bounds_ = nullptr;
};

enum class kind { counter, gauge, histogram };

// The registry. Registering takes a lock and may happen at any time off the request path (at
// startup, or on reload when a room appears); cell storage never moves once handed out, so
// handles stay valid for the registry's life. Scraping reads cells without stopping writers.
class registry {
  public:
    // `slots`: how many writers (workers + others). Slot indexes are 0 .. slots-1.
    explicit registry(unsigned slots);
    registry(const registry&) = delete;
    registry& operator=(const registry&) = delete;
    ~registry();

    unsigned slots() const { return slots_; }

    // Declares a family. Names and label names must be valid Prometheus identifiers; a family
    // declared twice must agree on kind and labels (checked; throws std::invalid_argument —
    // startup code only). `bounds` (histograms only) are ascending upper bounds in seconds.
    void declare(std::string_view name, std::string_view help, kind k,
                 std::vector<std::string> label_names = {}, std::vector<double> bounds = {});

    // A series of a declared family; the same label values return the same series.
    counter add_counter(std::string_view name, std::vector<std::string> label_values = {});
    gauge add_gauge(std::string_view name, std::vector<std::string> label_values = {});
    histogram add_histogram(std::string_view name, std::vector<std::string> label_values = {});

    // The Prometheus text exposition format (version 0.0.4), families in declaration order,
    // series in creation order.
    std::string text() const;

    // The sum over slots of one cell (handles' value()).
    std::int64_t sum(std::uint32_t index) const;

    // For handles: the cell of `slot`.
    cell& at(unsigned slot, std::uint32_t index) const {
        return chunks_[slot][index >> chunk_bits].load(
            std::memory_order_acquire)[index & (chunk_size - 1)];
    }

  private:
    static constexpr unsigned chunk_bits = 8;
    static constexpr std::uint32_t chunk_size = 1u << chunk_bits;
    static constexpr std::size_t max_chunks = 1024;  // 262144 cells: far beyond any config

    struct series {
        std::vector<std::string> label_values;
        std::uint32_t cell = 0;
    };
    struct family {
        std::string name;
        std::string help;
        kind k = kind::counter;
        std::vector<std::string> label_names;
        std::shared_ptr<const std::vector<double>> bounds;  // histograms only
        std::deque<series> all;
    };

    family& find(std::string_view name, kind k, std::size_t n_labels);
    std::uint32_t series_cell(family& f, std::vector<std::string> label_values,
                              std::uint32_t cells);
    std::uint32_t allocate(std::uint32_t cells);

    unsigned slots_;
    mutable std::mutex mutex_;  // registration and scrape only
    std::deque<family> families_;
    std::uint32_t next_cell_ = 0;
    // chunks_[slot][i]: cells i*chunk_size ... of that slot, published once, freed at the end.
    std::unique_ptr<std::unique_ptr<std::atomic<cell*>[]>[]> chunks_;
};

// Response status classes of the proxy (1xx … 5xx).
enum class status_class : std::uint8_t {
    informational,
    success,
    redirect,
    client_error,
    server_error
};
inline constexpr std::size_t status_class_count = 5;
status_class status_class_of(unsigned status);

// The protocol a client's request came in.
enum class http_protocol : std::uint8_t { http10, http11, http2 };
inline constexpr std::size_t http_protocol_count = 3;

// What the HTTP/2 codec refused.
enum class http2_refusal : std::uint8_t {
    calm,          // a connection sent GOAWAY ENHANCE_YOUR_CALM (rapid reset, a flood of frames)
    malformed,     // a stream reset before any room saw it (bad fields, headers too large)
    client_reset,  // a stream the client reset
};
inline constexpr std::size_t http2_refusal_count = 3;

// Why a request to the origin failed.
enum class origin_error : std::uint8_t { connect, timeout, tls, reset, protocol };
inline constexpr std::size_t origin_error_count = 5;

// The handles of one room (label room="<id>").
struct room_metrics {
    gauge active_users;            // waitroom_room_active_users
    gauge queued_users;            // waitroom_room_queued_users
    gauge estimated_wait_seconds;  // waitroom_room_estimated_wait_seconds
    gauge lease_size;              // waitroom_room_lease_slots
    counter admitted;              // waitroom_room_admitted_total
    counter queued;                // waitroom_room_queued_total
    counter rejected;              // waitroom_room_rejected_total
    counter bypassed;              // waitroom_room_bypassed_total
    counter revoked;               // waitroom_room_revoked_total
    counter sessions_expired;      // waitroom_room_sessions_expired_total
    counter top_ups;               // waitroom_room_lease_top_ups_total
    counter store_failures;        // waitroom_room_store_failures_total
    counter flagged;               // waitroom_room_flagged_total
    counter network_changed;       // waitroom_room_cookie_network_changed_total
    counter challenges_issued;     // waitroom_room_challenges_issued_total
    counter challenges_solved;     // waitroom_room_challenges_solved_total
    counter challenge_failures;    // waitroom_room_challenge_failures_total
    // Analytics: what the queue did to the visitors it admitted, and how honest it was.
    counter admitted_from_queue;    // waitroom_room_admitted_from_queue_total
    counter admitted_out_of_order;  // waitroom_room_admitted_out_of_order_total
    counter abandoned;              // waitroom_room_abandoned_total
    histogram queue_wait;           // waitroom_room_queue_wait_seconds
    histogram estimate_error;       // waitroom_room_wait_estimate_error_seconds
    histogram session_duration;     // waitroom_room_session_duration_seconds
};

// The handles of one origin server (label server="<url>"). What its answers took and how many
// failed, read by whoever sizes a room from the origin's health as well as by Prometheus.
struct origin_server_metrics {
    counter requests;    // waitroom_origin_server_requests_total: answered or failed
    counter errors;      // waitroom_origin_server_errors_total: connect, timeout, 5xx
    histogram response;  // waitroom_origin_server_response_seconds: to the response head
    gauge healthy;       // waitroom_origin_server_healthy: 1 when it takes requests
    counter ejections;   // waitroom_origin_server_ejections_total
};

// Every metric of waitroomd, named once. Request-path code keeps a reference to this object and
// `room_metrics` pointers resolved at config time, then bumps handles with its worker index:
//     m.requests(metrics::status_class_of(status)).inc(worker);
class metric_set {
  public:
    // `slots`: workers + extra writers (the sync task, admin); see registry.
    explicit metric_set(unsigned slots);

    registry& reg() { return reg_; }
    unsigned slots() const { return reg_.slots(); }

    // The handles of a room, created on first call (startup or reload; takes a lock). The
    // reference stays valid for the life of the set, also after a reload drops the room.
    const room_metrics& room(std::string_view id);
    // The handles of an origin server, by its URL: created on first call, as room().
    const origin_server_metrics& origin_server(std::string_view url);

    counter requests(status_class c) const { return requests_[static_cast<std::size_t>(c)]; }
    counter origin_errors(origin_error e) const {
        return origin_errors_[static_cast<std::size_t>(e)];
    }
    counter requests_by_protocol(http_protocol p) const {
        return requests_by_protocol_[static_cast<std::size_t>(p)];
    }
    counter http2_refused(http2_refusal r) const {
        return http2_refused_[static_cast<std::size_t>(r)];
    }
    histogram request_latency() const { return request_latency_; }
    gauge client_connections() const { return client_connections_; }
    gauge origin_connections() const { return origin_connections_; }
    counter origin_reused() const { return origin_reused_; }  // request on a pooled connection
    counter origin_opened() const { return origin_opened_; }  // request needed a new connection

    histogram store_sync_latency() const { return store_sync_latency_; }
    counter store_failures() const { return store_failures_; }
    gauge store_degraded() const { return store_degraded_; }  // 1 while degraded

    // A certificate file that failed to load on reload (its listener kept the certificates it had).
    counter tls_reload_failures() const { return tls_reload_failures_; }
    // The notAfter (unix time) of a listener's certificate; created on first call (takes a lock).
    gauge tls_certificate_expiry(std::string_view listener, std::string_view name);

    std::string text() const { return reg_.text(); }

  private:
    registry reg_;
    std::mutex handles_mutex_;  // rooms_ and servers_
    std::unordered_map<std::string, std::unique_ptr<room_metrics>> rooms_;
    std::unordered_map<std::string, std::unique_ptr<origin_server_metrics>> servers_;
    std::array<counter, status_class_count> requests_;
    std::array<counter, origin_error_count> origin_errors_;
    std::array<counter, http_protocol_count> requests_by_protocol_;
    std::array<counter, http2_refusal_count> http2_refused_;
    histogram request_latency_;
    gauge client_connections_;
    gauge origin_connections_;
    counter origin_reused_;
    counter origin_opened_;
    histogram store_sync_latency_;
    counter store_failures_;
    gauge store_degraded_;
    counter tls_reload_failures_;
};

// --- inline fast paths -------------------------------------------------------------------------

inline void counter::inc(unsigned slot, std::int64_t n) const {
    reg_->at(slot, cell_).fetch_add(n, std::memory_order_relaxed);
}

inline void gauge::set(unsigned slot, std::int64_t v) const {
    reg_->at(slot, cell_).store(v, std::memory_order_relaxed);
}

inline void gauge::add(unsigned slot, std::int64_t n) const {
    reg_->at(slot, cell_).fetch_add(n, std::memory_order_relaxed);
}

}  // namespace waitroom::metrics
