// The Prometheus text exposition format (version 0.0.4) is written by hand here. Debian's
// prometheus-cpp-dev keeps one shared atomic per metric, which every worker would write on the
// request path (a cache line bounced between cores per request), and it brings its own HTTP
// server (civetweb) and curl, while the admin listener already serves /metrics; per-worker slots
// summed at scrape time, and a few lines of `name{labels} value` text, cost less than that glue.
#include "waitroom/metrics/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace waitroom::metrics {

namespace {

bool valid_name(std::string_view s, bool allow_colon) {
    if (s.empty()) {
        return false;
    }
    for (std::size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                  (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
        if (!ok) {
            return false;
        }
    }
    return true;
}

void append_double(std::string& out, double v) {
    if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
        return;
    }
    if (std::isnan(v)) {
        out += "NaN";
        return;
    }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

void append_int(std::string& out, std::int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// Label values escape backslash, double quote and newline; HELP text backslash and newline.
void append_escaped(std::string& out, std::string_view s, bool quote) {
    for (char c : s) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (quote && c == '"') {
            out += "\\\"";
        } else {
            out += c;
        }
    }
}

// `{a="x",b="y"` without the closing brace, or "" when there are no labels and no extra.
void append_labels(std::string& out, const std::vector<std::string>& names,
                   const std::vector<std::string>& values, std::string_view extra_name = {},
                   std::string_view extra_value = {}) {
    if (names.empty() && extra_name.empty()) {
        return;
    }
    out += '{';
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) {
            out += ',';
        }
        out += names[i];
        out += "=\"";
        append_escaped(out, values[i], true);
        out += '"';
    }
    if (!extra_name.empty()) {
        if (!names.empty()) {
            out += ',';
        }
        out += extra_name;
        out += "=\"";
        out += extra_value;
        out += '"';
    }
    out += '}';
}

const char* type_name(kind k) {
    switch (k) {
        case kind::counter:
            return "counter";
        case kind::gauge:
            return "gauge";
        case kind::histogram:
            return "histogram";
    }
    return "untyped";
}

}  // namespace

// --- handles -------------------------------------------------------------------------------------

void histogram::observe(unsigned slot, double seconds) const {
    const auto& b = **bounds_;
    // A handful of bounds: a linear scan beats a binary search and allocates nothing.
    std::size_t i = 0;
    while (i < b.size() && seconds > b[i]) {
        ++i;
    }
    reg_->at(slot, cell_ + static_cast<std::uint32_t>(i)).fetch_add(1, std::memory_order_relaxed);
    // Signed, so that a histogram of errors sums both ways; clamped to a century either way.
    const double ns = std::clamp(seconds * 1e9, -3.2e18, 3.2e18);
    std::int64_t n = std::isnan(ns) ? 0 : static_cast<std::int64_t>(std::llround(ns));
    reg_->at(slot, cell_ + static_cast<std::uint32_t>(b.size() + 1))
        .fetch_add(n, std::memory_order_relaxed);
}

histogram_reading histogram::read() const {
    histogram_reading r;
    if (reg_ == nullptr) {
        return r;
    }
    r.bounds = *bounds_;
    r.buckets.resize(r.bounds->size() + 1);
    for (std::size_t i = 0; i < r.buckets.size(); ++i) {
        r.buckets[i] = reg_->sum(cell_ + static_cast<std::uint32_t>(i));
    }
    r.sum =
        static_cast<double>(reg_->sum(cell_ + static_cast<std::uint32_t>(r.bounds->size() + 1))) /
        1e9;
    return r;
}

std::int64_t counter::value() const {
    return reg_ == nullptr ? 0 : reg_->sum(cell_);
}

std::int64_t histogram_reading::count() const {
    std::int64_t n = 0;
    for (auto b : buckets) {
        n += b;
    }
    return n;
}

histogram_reading histogram_reading::since(const histogram_reading& earlier) const {
    histogram_reading out = *this;
    if (earlier.buckets.size() != buckets.size()) {
        return out;  // nothing earlier (or another histogram): everything is new
    }
    for (std::size_t i = 0; i < buckets.size(); ++i) {
        out.buckets[i] = std::max<std::int64_t>(0, buckets[i] - earlier.buckets[i]);
    }
    out.sum = sum - earlier.sum;
    return out;
}

double quantile(const histogram_reading& r, double q) {
    const std::int64_t total = r.count();
    if (total == 0 || !r.bounds || r.buckets.size() != r.bounds->size() + 1 ||
        !(q >= 0 && q <= 1)) {
        return NAN;
    }
    const std::vector<double>& bounds = *r.bounds;
    const double rank = q * static_cast<double>(total);
    std::int64_t below = 0;
    for (std::size_t i = 0; i < r.buckets.size(); ++i) {
        const std::int64_t in = r.buckets[i];
        if (in > 0 && static_cast<double>(below + in) >= rank) {
            if (i == bounds.size()) {
                return bounds.empty() ? NAN : bounds.back();
            }
            const double upper = bounds[i];
            const double lower = i > 0 ? bounds[i - 1] : (upper > 0 ? 0.0 : upper);
            return lower +
                   (upper - lower) * (rank - static_cast<double>(below)) / static_cast<double>(in);
        }
        below += in;
    }
    return bounds.empty() ? NAN : bounds.back();
}

double mean(const histogram_reading& r) {
    const std::int64_t n = r.count();
    return n == 0 ? NAN : r.sum / static_cast<double>(n);
}

// --- registry ------------------------------------------------------------------------------------

registry::registry(unsigned slots) : slots_(slots == 0 ? 1 : slots) {
    chunks_ = std::make_unique<std::unique_ptr<std::atomic<cell*>[]>[]>(slots_);
    for (unsigned s = 0; s < slots_; ++s) {
        chunks_[s] = std::make_unique<std::atomic<cell*>[]>(max_chunks);
        for (std::size_t c = 0; c < max_chunks; ++c) {
            chunks_[s][c].store(nullptr, std::memory_order_relaxed);
        }
    }
}

registry::~registry() {
    for (unsigned s = 0; s < slots_; ++s) {
        for (std::size_t c = 0; c < max_chunks; ++c) {
            delete[] chunks_[s][c].load(std::memory_order_relaxed);
        }
    }
}

void registry::declare(std::string_view name, std::string_view help, kind k,
                       std::vector<std::string> label_names, std::vector<double> bounds) {
    if (!valid_name(name, true)) {
        throw std::invalid_argument("metrics: invalid metric name '" + std::string(name) + "'");
    }
    for (const auto& l : label_names) {
        if (!valid_name(l, false) || l.starts_with("__") || (k == kind::histogram && l == "le")) {
            throw std::invalid_argument("metrics: invalid label name '" + l + "' of " +
                                        std::string(name));
        }
    }
    if (k == kind::histogram) {
        if (bounds.empty() || !std::is_sorted(bounds.begin(), bounds.end()) ||
            std::adjacent_find(bounds.begin(), bounds.end()) != bounds.end()) {
            throw std::invalid_argument("metrics: histogram " + std::string(name) +
                                        " needs strictly ascending bucket bounds");
        }
    } else if (!bounds.empty()) {
        throw std::invalid_argument("metrics: only histograms have bucket bounds");
    }
    std::lock_guard lock(mutex_);
    for (auto& f : families_) {
        if (f.name == name) {
            if (f.k != k || f.label_names != label_names ||
                (f.bounds ? *f.bounds : std::vector<double>{}) != bounds) {
                throw std::invalid_argument("metrics: " + std::string(name) +
                                            " declared twice differently");
            }
            return;
        }
    }
    family f;
    f.name = std::string(name);
    f.help = std::string(help);
    f.k = k;
    f.label_names = std::move(label_names);
    if (k == kind::histogram) {
        f.bounds = std::make_shared<const std::vector<double>>(std::move(bounds));
    }
    families_.push_back(std::move(f));
}

registry::family& registry::find(std::string_view name, kind k, std::size_t n_labels) {
    for (auto& f : families_) {
        if (f.name == name) {
            if (f.k != k) {
                throw std::invalid_argument("metrics: " + std::string(name) + " is a " +
                                            type_name(f.k));
            }
            if (f.label_names.size() != n_labels) {
                throw std::invalid_argument("metrics: " + std::string(name) + " takes " +
                                            std::to_string(f.label_names.size()) + " labels");
            }
            return f;
        }
    }
    throw std::invalid_argument("metrics: " + std::string(name) + " was not declared");
}

std::uint32_t registry::allocate(std::uint32_t cells) {
    std::uint32_t first = next_cell_;
    std::uint32_t end = first + cells;
    if (((end + chunk_size - 1) >> chunk_bits) > max_chunks) {
        throw std::length_error("metrics: too many series");
    }
    for (std::uint32_t c = first >> chunk_bits; c < ((end + chunk_size - 1) >> chunk_bits); ++c) {
        for (unsigned s = 0; s < slots_; ++s) {
            if (chunks_[s][c].load(std::memory_order_relaxed) == nullptr) {
                cell* chunk = new cell[chunk_size];
                for (std::uint32_t i = 0; i < chunk_size; ++i) {
                    chunk[i].store(0, std::memory_order_relaxed);
                }
                chunks_[s][c].store(chunk, std::memory_order_release);
            }
        }
    }
    next_cell_ = end;
    return first;
}

std::uint32_t registry::series_cell(family& f, std::vector<std::string> label_values,
                                    std::uint32_t cells) {
    for (const auto& s : f.all) {
        if (s.label_values == label_values) {
            return s.cell;
        }
    }
    series s;
    s.label_values = std::move(label_values);
    s.cell = allocate(cells);
    f.all.push_back(std::move(s));
    return f.all.back().cell;
}

counter registry::add_counter(std::string_view name, std::vector<std::string> label_values) {
    std::lock_guard lock(mutex_);
    family& f = find(name, kind::counter, label_values.size());
    return counter(this, series_cell(f, std::move(label_values), 1));
}

gauge registry::add_gauge(std::string_view name, std::vector<std::string> label_values) {
    std::lock_guard lock(mutex_);
    family& f = find(name, kind::gauge, label_values.size());
    return gauge(this, series_cell(f, std::move(label_values), 1));
}

histogram registry::add_histogram(std::string_view name, std::vector<std::string> label_values) {
    std::lock_guard lock(mutex_);
    family& f = find(name, kind::histogram, label_values.size());
    // Buckets (one per bound, plus +Inf), then the sum.
    auto cells = static_cast<std::uint32_t>(f.bounds->size() + 2);
    return histogram(this, series_cell(f, std::move(label_values), cells), &f.bounds);
}

std::int64_t registry::sum(std::uint32_t index) const {
    std::int64_t total = 0;
    for (unsigned s = 0; s < slots_; ++s) {
        total += at(s, index).load(std::memory_order_relaxed);
    }
    return total;
}

std::string registry::text() const {
    std::lock_guard lock(mutex_);
    std::string out;
    out.reserve(4096);
    for (const auto& f : families_) {
        if (f.all.empty()) {
            continue;
        }
        out += "# HELP ";
        out += f.name;
        out += ' ';
        append_escaped(out, f.help, false);
        out += "\n# TYPE ";
        out += f.name;
        out += ' ';
        out += type_name(f.k);
        out += '\n';
        for (const auto& s : f.all) {
            if (f.k != kind::histogram) {
                out += f.name;
                append_labels(out, f.label_names, s.label_values);
                out += ' ';
                append_int(out, sum(s.cell));
                out += '\n';
                continue;
            }
            // Buckets are stored apart and made cumulative here; the count is the +Inf bucket.
            const std::vector<double>& bounds = *f.bounds;
            std::int64_t cumulative = 0;
            std::string le;
            for (std::size_t i = 0; i <= bounds.size(); ++i) {
                cumulative += sum(s.cell + static_cast<std::uint32_t>(i));
                le.clear();
                append_double(le, i < bounds.size() ? bounds[i] : INFINITY);
                out += f.name;
                out += "_bucket";
                append_labels(out, f.label_names, s.label_values, "le", le);
                out += ' ';
                append_int(out, cumulative);
                out += '\n';
            }
            auto sum_ns = sum(s.cell + static_cast<std::uint32_t>(bounds.size() + 1));
            out += f.name;
            out += "_sum";
            append_labels(out, f.label_names, s.label_values);
            out += ' ';
            append_double(out, static_cast<double>(sum_ns) / 1e9);
            out += '\n';
            out += f.name;
            out += "_count";
            append_labels(out, f.label_names, s.label_values);
            out += ' ';
            append_int(out, cumulative);
            out += '\n';
        }
    }
    return out;
}

// --- the named set -------------------------------------------------------------------------------

status_class status_class_of(unsigned status) {
    if (status < 200) {
        return status_class::informational;
    }
    if (status < 300) {
        return status_class::success;
    }
    if (status < 400) {
        return status_class::redirect;
    }
    if (status < 500) {
        return status_class::client_error;
    }
    return status_class::server_error;
}

namespace {

// Request latency through the proxy: from a millisecond (answered from memory) to a slow origin.
const std::vector<double> request_bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                            0.25,  0.5,    1,     2.5,  5,     10};
// A store round trip: local is microseconds, Redis a millisecond or so; the timeout is 0.5 s.
const std::vector<double> sync_bounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                         0.05,   0.1,   0.25,   0.5,   1};
// Time in the queue and on the origin: seconds to hours.
const std::vector<double> queue_wait_bounds = {5,   10,  20,   30,   60,   120,  180,  300,  450,
                                               600, 900, 1200, 1800, 2700, 3600, 7200, 14400};
const std::vector<double> session_bounds = {10,   30,   60,   120,  300,  600,  900,
                                            1200, 1800, 2700, 3600, 7200, 14400};
// An estimate's error, both ways: the estimate is in whole minutes, so finer than 15 s tells
// nothing.
const std::vector<double> estimate_error_bounds = {-3600, -1800, -900, -600, -300, -180, -120,
                                                   -60,   -30,   -15,  0,    15,   30,   60,
                                                   120,   180,   300,  600,  900,  1800, 3600};

}  // namespace

metric_set::metric_set(unsigned slots) : reg_(slots) {
    using L = std::vector<std::string>;
    auto& r = reg_;
    r.declare("waitroom_room_active_users", "Admitted visitors holding a session, all nodes.",
              kind::gauge, L{"room"});
    r.declare("waitroom_room_queued_users", "Visitors waiting in the queue, all nodes.",
              kind::gauge, L{"room"});
    r.declare("waitroom_room_estimated_wait_seconds",
              "Estimated wait of a visitor joining the queue now.", kind::gauge, L{"room"});
    r.declare("waitroom_room_lease_slots", "Admission slots leased to this node.", kind::gauge,
              L{"room"});
    r.declare("waitroom_room_admitted_total", "Visitors admitted by this node.", kind::counter,
              L{"room"});
    r.declare("waitroom_room_queued_total", "Visitors who joined the queue on this node.",
              kind::counter, L{"room"});
    r.declare("waitroom_room_rejected_total", "Requests answered with the reject page.",
              kind::counter, L{"room"});
    r.declare("waitroom_room_bypassed_total", "Requests passed by a bypass rule.", kind::counter,
              L{"room"});
    r.declare("waitroom_room_revoked_total", "Sessions revoked by the origin.", kind::counter,
              L{"room"});
    r.declare("waitroom_room_sessions_expired_total",
              "Visitors whose session expired and who had to queue again.", kind::counter,
              L{"room"});
    r.declare("waitroom_room_lease_top_ups_total",
              "Top-ups: calls asking the store for more slots between syncs.", kind::counter,
              L{"room"});
    r.declare("waitroom_room_store_failures_total",
              "Syncs in which the store failed this room alone (its script raised an error) while "
              "it answered the others.",
              kind::counter, L{"room"});
    r.declare("waitroom_room_flagged_total",
              "Queued visitors flagged for refreshing far faster than their Refresh "
              "(abuse_action).",
              kind::counter, L{"room"});
    r.declare("waitroom_room_cookie_network_changed_total",
              "Cookies bound to another network (cookie.bind: prefix), treated as new visitors.",
              kind::counter, L{"room"});
    r.declare("waitroom_room_challenges_issued_total",
              "Proof-of-work challenges given to new visitors who would be queued (challenge).",
              kind::counter, L{"room"});
    r.declare("waitroom_room_challenges_solved_total",
              "Challenges solved: visitors who joined the queue (or got in) with a solution.",
              kind::counter, L{"room"});
    r.declare("waitroom_room_challenge_failures_total",
              "Requests whose Waitroom-Solution did not solve the visitor's challenge.",
              kind::counter, L{"room"});

    r.declare("waitroom_room_admitted_from_queue_total",
              "Queued visitors admitted by this node (their place in the queue spent).",
              kind::counter, L{"room"});
    r.declare("waitroom_room_admitted_out_of_order_total",
              "Queued visitors admitted by this node while a visitor of an older arrival window "
              "was still waiting.",
              kind::counter, L{"room"});
    r.declare("waitroom_room_abandoned_total",
              "Queued visitors who stopped refreshing: still counted in a waiting window when it "
              "lapsed (found by this node's syncs).",
              kind::counter, L{"room"});
    r.declare("waitroom_room_queue_wait_seconds",
              "Time in the queue of the visitors admitted from it, from their first queue page.",
              kind::histogram, L{"room"}, queue_wait_bounds);
    r.declare("waitroom_room_wait_estimate_error_seconds",
              "Actual wait minus the first estimate shown, at admission (positive: longer than "
              "told).",
              kind::histogram, L{"room"}, estimate_error_bounds);
    r.declare("waitroom_room_session_duration_seconds",
              "Time on the origin: from admission to the session's end, for the sessions whose "
              "end this node saw (revoked, or expired and back).",
              kind::histogram, L{"room"}, session_bounds);

    r.declare("waitroom_http_requests_total", "Requests answered on the public listener.",
              kind::counter, L{"code"});
    r.declare("waitroom_http_request_duration_seconds",
              "Time from a request's header to the end of its response.", kind::histogram, L{},
              request_bounds);
    r.declare("waitroom_client_connections", "Open client connections.", kind::gauge);
    r.declare("waitroom_http_requests_by_protocol_total",
              "Requests answered, by the protocol the client spoke.", kind::counter, L{"protocol"});
    r.declare("waitroom_http2_refused_total",
              "What the HTTP/2 codec refused: connections told to calm down (GOAWAY "
              "ENHANCE_YOUR_CALM), malformed streams, streams the client reset.",
              kind::counter, L{"what"});
    r.declare("waitroom_origin_connections", "Open connections to the origin.", kind::gauge);
    r.declare("waitroom_origin_errors_total", "Requests to the origin that failed, by cause.",
              kind::counter, L{"kind"});
    r.declare("waitroom_origin_requests_total",
              "Requests sent to the origin, by whether a pooled connection was reused.",
              kind::counter, L{"connection"});

    r.declare("waitroom_origin_server_requests_total",
              "Requests sent to one origin server: answered, or failed.", kind::counter,
              L{"server"});
    r.declare("waitroom_origin_server_errors_total",
              "Requests to one origin server that failed to connect, timed out or got a 5xx.",
              kind::counter, L{"server"});
    r.declare("waitroom_origin_server_response_seconds",
              "Time from a request's start on one origin server to its response head.",
              kind::histogram, L{"server"}, request_bounds);
    r.declare("waitroom_origin_server_healthy",
              "1 while an origin server takes new requests, 0 while it is ejected or fails its "
              "health checks.",
              kind::gauge, L{"server"});
    r.declare("waitroom_origin_server_ejections_total",
              "Times an origin server was taken out after failures in a row.", kind::counter,
              L{"server"});

    r.declare("waitroom_store_sync_duration_seconds", "Round trip of one sync with the store.",
              kind::histogram, L{}, sync_bounds);
    r.declare("waitroom_store_failures_total", "Store calls that failed or timed out.",
              kind::counter);
    r.declare("waitroom_store_degraded", "1 while the node runs without its store.", kind::gauge);
    r.declare("waitroom_tls_reload_failures_total",
              "Certificate or key files that failed to load on reload (the listener kept its "
              "certificates).",
              kind::counter);
    r.declare("waitroom_tls_certificate_expiry_seconds",
              "Unix time of a served certificate's notAfter.", kind::gauge, L{"listener", "name"});

    static constexpr const char* classes[status_class_count] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
    for (std::size_t i = 0; i < status_class_count; ++i) {
        requests_[i] = r.add_counter("waitroom_http_requests_total", L{classes[i]});
    }
    static constexpr const char* protocols[http_protocol_count] = {"HTTP/1.0", "HTTP/1.1",
                                                                   "HTTP/2"};
    for (std::size_t i = 0; i < http_protocol_count; ++i) {
        requests_by_protocol_[i] =
            r.add_counter("waitroom_http_requests_by_protocol_total", L{protocols[i]});
    }
    static constexpr const char* refusals[http2_refusal_count] = {"calm", "malformed",
                                                                  "client_reset"};
    for (std::size_t i = 0; i < http2_refusal_count; ++i) {
        http2_refused_[i] = r.add_counter("waitroom_http2_refused_total", L{refusals[i]});
    }
    request_latency_ = r.add_histogram("waitroom_http_request_duration_seconds");
    client_connections_ = r.add_gauge("waitroom_client_connections");
    origin_connections_ = r.add_gauge("waitroom_origin_connections");
    static constexpr const char* errors[origin_error_count] = {"connect", "timeout", "tls", "reset",
                                                               "protocol"};
    for (std::size_t i = 0; i < origin_error_count; ++i) {
        origin_errors_[i] = r.add_counter("waitroom_origin_errors_total", L{errors[i]});
    }
    origin_reused_ = r.add_counter("waitroom_origin_requests_total", L{"reused"});
    origin_opened_ = r.add_counter("waitroom_origin_requests_total", L{"new"});
    store_sync_latency_ = r.add_histogram("waitroom_store_sync_duration_seconds");
    store_failures_ = r.add_counter("waitroom_store_failures_total");
    store_degraded_ = r.add_gauge("waitroom_store_degraded");
    tls_reload_failures_ = r.add_counter("waitroom_tls_reload_failures_total");
}

gauge metric_set::tls_certificate_expiry(std::string_view listener, std::string_view name) {
    return reg_.add_gauge("waitroom_tls_certificate_expiry_seconds",
                          {std::string(listener), std::string(name)});
}

namespace {

// The handles of `key` in `all`, made by `make(handles, label values)` on first use; the caller
// holds the lock that guards `all`.
template <class Handles, class Make>
const Handles& find_or_make(std::unordered_map<std::string, std::unique_ptr<Handles>>& all,
                            std::string_view key, Make make) {
    auto it = all.find(std::string(key));
    if (it == all.end()) {
        auto handles = std::make_unique<Handles>();
        make(*handles, std::vector<std::string>{std::string(key)});
        it = all.emplace(std::string(key), std::move(handles)).first;
    }
    return *it->second;
}

}  // namespace

const origin_server_metrics& metric_set::origin_server(std::string_view url) {
    std::lock_guard lock(handles_mutex_);
    return find_or_make(servers_, url, [this](origin_server_metrics& m, const auto& l) {
        m.requests = reg_.add_counter("waitroom_origin_server_requests_total", l);
        m.errors = reg_.add_counter("waitroom_origin_server_errors_total", l);
        m.response = reg_.add_histogram("waitroom_origin_server_response_seconds", l);
        m.healthy = reg_.add_gauge("waitroom_origin_server_healthy", l);
        m.ejections = reg_.add_counter("waitroom_origin_server_ejections_total", l);
    });
}

const room_metrics& metric_set::room(std::string_view id) {
    std::lock_guard lock(handles_mutex_);
    return find_or_make(rooms_, id, [this](room_metrics& m, const auto& l) {
        m.active_users = reg_.add_gauge("waitroom_room_active_users", l);
        m.queued_users = reg_.add_gauge("waitroom_room_queued_users", l);
        m.estimated_wait_seconds = reg_.add_gauge("waitroom_room_estimated_wait_seconds", l);
        m.lease_size = reg_.add_gauge("waitroom_room_lease_slots", l);
        m.admitted = reg_.add_counter("waitroom_room_admitted_total", l);
        m.queued = reg_.add_counter("waitroom_room_queued_total", l);
        m.rejected = reg_.add_counter("waitroom_room_rejected_total", l);
        m.bypassed = reg_.add_counter("waitroom_room_bypassed_total", l);
        m.revoked = reg_.add_counter("waitroom_room_revoked_total", l);
        m.sessions_expired = reg_.add_counter("waitroom_room_sessions_expired_total", l);
        m.top_ups = reg_.add_counter("waitroom_room_lease_top_ups_total", l);
        m.store_failures = reg_.add_counter("waitroom_room_store_failures_total", l);
        m.flagged = reg_.add_counter("waitroom_room_flagged_total", l);
        m.network_changed = reg_.add_counter("waitroom_room_cookie_network_changed_total", l);
        m.challenges_issued = reg_.add_counter("waitroom_room_challenges_issued_total", l);
        m.challenges_solved = reg_.add_counter("waitroom_room_challenges_solved_total", l);
        m.challenge_failures = reg_.add_counter("waitroom_room_challenge_failures_total", l);
        m.admitted_from_queue = reg_.add_counter("waitroom_room_admitted_from_queue_total", l);
        m.admitted_out_of_order = reg_.add_counter("waitroom_room_admitted_out_of_order_total", l);
        m.abandoned = reg_.add_counter("waitroom_room_abandoned_total", l);
        m.queue_wait = reg_.add_histogram("waitroom_room_queue_wait_seconds", l);
        m.estimate_error = reg_.add_histogram("waitroom_room_wait_estimate_error_seconds", l);
        m.session_duration = reg_.add_histogram("waitroom_room_session_duration_seconds", l);
    });
}

}  // namespace waitroom::metrics
