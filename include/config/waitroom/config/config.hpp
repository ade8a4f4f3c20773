#pragma once
// The validated configuration: plain structs built once from YAML (see load.hpp), held in an
// immutable snapshot `std::shared_ptr<const config>` and swapped whole on reload. Setting names
// follow Cloudflare's waiting-room API; every field has its default here.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace waitroom::config {

using duration = std::chrono::milliseconds;
using time_point = std::chrono::system_clock::time_point;

// Where a setting was written, for a problem found after loading (a certificate that does not
// match its key, say): the key path and its line:column in the config file.
struct setting_place {
    std::string path;  // key path, e.g. "listen[0].tls.certificates[1].key"
    int line = 0;      // 1-based; 0 when unknown
    int column = 0;    // 1-based; 0 when unknown
};

// One certificate of a TLS listener: PEM files.
struct tls_certificate {
    std::string cert;       // certificate chain file (PEM), leaf first
    std::string key;        // private key file (PEM)
    setting_place cert_at;  // where `cert` was set
    setting_place key_at;   // where `key` was set
};

// The lowest TLS version a listener accepts (YAML "1.2" or "1.3").
enum class tls_version { v1_2, v1_3 };

// Mozilla's "intermediate" TLS 1.2 cipher list (TLS 1.3 suites are OpenSSL's defaults).
inline constexpr const char* default_tls_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";

// `tls` on a listener: `{cert, key}` (one certificate) or `{certificates: [{cert, key}, ...]}`,
// chosen by SNI; the first is the default.
struct tls_settings {
    std::vector<tls_certificate> certificates;    // at least one
    tls_version min_version = tls_version::v1_2;  // older clients are refused
    std::string ciphers = default_tls_ciphers;    // TLS 1.2 cipher list (OpenSSL syntax)
};

// One public listener, written "host:port" (IPv6 as "[::1]:8080").
struct listener {
    std::string host = "0.0.0.0";     // address to bind
    std::uint16_t port = 8080;        // port to bind; 0 = any free port (tests)
    std::optional<tls_settings> tls;  // terminate TLS on this listener when set
    bool proxy_protocol = false;      // every connection starts with a PROXY v1/v2 header
    bool http2 = true;                // TLS listeners: HTTP/2 may be offered by ALPN
    bool h2c = false;                 // plain listeners: HTTP/2 with prior knowledge
};

// An IP network: 16 bytes (IPv4 as v4-mapped IPv6, prefix + 96) and its prefix length; host
// bits are clear.
struct cidr {
    std::array<std::uint8_t, 16> net{};
    unsigned prefix_len = 0;
};

// What the gateway does with X-Forwarded-For, X-Real-IP and Forwarded from a peer that is not
// in trusted_proxies.
enum class forwarded_mode {
    overwrite,  // X-Forwarded-For becomes the peer alone; X-Real-IP and Forwarded replaced
    append,     // the peer is appended to the client's X-Forwarded-For; the others pass
};

// The Host sent to the origin (YAML origin.host_header).
enum class host_header_mode {
    client,  // the visitor's canonical Host (as Cloudflare, and nginx with $host, send it)
    origin,  // the host[:port] of origin.url
};

// A request whose Host no room names, when rooms name hosts (YAML origin.unknown_hosts).
enum class unknown_hosts_policy {
    reject,  // 421 Misdirected Request
    pass,    // forwarded as any unmatched request
};

// One origin server: an item of YAML origin.servers, or origin.url alone.
struct origin_server {
    std::string url;         // as written
    bool tls = false;        // https://
    std::string host;        // host part of url
    std::uint16_t port = 0;  // port of url (80/443 by default)
    std::string base_path;   // path prefix of url, "" for none
    unsigned weight = 1;     // its share of requests against the others' (1 … 1000)
};

// How a request's server is chosen among the healthy ones (YAML origin.balance).
enum class balance_policy {
    round_robin,    // in turn, weighted (smooth: a heavy server's turns are spread out)
    least_request,  // the one with fewer requests in flight of two drawn by weight
};

// Probes of each server from one place per node (YAML origin.health_check); off by default.
struct health_check {
    bool enabled = false;                         // set by writing the key
    std::string path = "/healthz";                // GET with the server's Host; 2xx or 3xx = up
    duration interval = std::chrono::seconds{5};  // between two probes of one server
    duration timeout = std::chrono::seconds{2};   // connect and answer; longer = a failed probe
    unsigned healthy = 2;                         // passes in a row that bring a server back
    unsigned unhealthy = 3;                       // failures in a row that take it out
};

// The origin every admitted request is forwarded to: one server (url) or several (servers),
// all reached with these settings.
struct origin {
    std::string url = "http://127.0.0.1:3000";           // as written
    bool tls = false;                                    // https:// origin
    std::string host = "127.0.0.1";                      // host part of url
    std::uint16_t port = 3000;                           // port of url (80/443 by default)
    std::string base_path;                               // path prefix of url, "" for none
    duration connect_timeout = std::chrono::seconds{5};  // TCP (+TLS) connect → 502 when over
    duration timeout = std::chrono::seconds{60};         // waiting for response headers → 504
    std::size_t max_connections = 256;  // keep-alive connections kept per worker thread
    duration idle_timeout = std::chrono::seconds{60};  // idle pooled connection is closed after
    duration pool_wait_timeout = std::chrono::seconds{10};  // waiting for a pooled one → 503
    std::size_t max_pool_waiters = 1024;  // requests waiting for one per worker; more → 503 at once
    // Origin connections (and waits for one) one client address may hold at once per worker;
    // more → 503. Unset: a quarter of max_connections (at least 1). 0 = no cap.
    std::optional<std::size_t> max_connections_per_client;
    // WebSocket tunnels open at once per worker (each holds an origin connection for as long as
    // it lasts); one more upgrade → 503. Unset: half of max_connections (at least 1). 0 = no
    // cap.
    std::optional<std::size_t> max_tunnels;
    bool verify_tls = true;   // verify the origin's certificate
    std::string ca_file;      // extra CA bundle for https origins ("" = system store)
    std::string server_name;  // SNI and verified name ("" = host)
    host_header_mode host_header = host_header_mode::client;            // Host sent to the origin
    unknown_hosts_policy unknown_hosts = unknown_hosts_policy::reject;  // Host no room names
    // Several servers (YAML origin.servers); empty: the one server of url. With servers, url and
    // the fields after it name the first one.
    std::vector<origin_server> servers;
    balance_policy balance = balance_policy::least_request;
    // Consecutive connect failures, timeouts or 5xx answers of a server that take it out of the
    // balancing for a while (0 = never).
    unsigned eject_after = 5;
    duration eject_time = std::chrono::seconds{10};       // the first time out; doubles on each
    duration max_eject_time = std::chrono::seconds{300};  // ejection in a row, up to this
    ::waitroom::config::health_check health_check;
};

// The servers of an origin: its `servers`, or the one of its url.
inline std::vector<origin_server> server_list(const origin& o) {
    if (!o.servers.empty()) {
        return o.servers;
    }
    return {origin_server{o.url, o.tls, o.host, o.port, o.base_path, 1}};
}

// The settings of `o` with the address of server `s`: what one server's pool connects with.
inline origin for_server(const origin& o, const origin_server& s) {
    origin out = o;
    out.url = s.url;
    out.tls = s.tls;
    out.host = s.host;
    out.port = s.port;
    out.base_path = s.base_path;
    out.servers.clear();
    return out;
}

// The cap max_connections_per_client stands for (0 = none).
inline std::size_t client_connection_cap(const origin& o) {
    if (o.max_connections_per_client) {
        return *o.max_connections_per_client;
    }
    return o.max_connections / 4 > 0 ? o.max_connections / 4 : 1;
}

// The cap max_tunnels stands for (0 = none).
inline std::size_t tunnel_cap(const origin& o) {
    if (o.max_tunnels) {
        return *o.max_tunnels;
    }
    return o.max_connections / 2 > 0 ? o.max_connections / 2 : 1;
}

// Limits and timeouts of client connections.
struct limits {
    std::size_t max_header_bytes = 16 * 1024;   // request line + headers → 431 when over
    std::uint64_t max_body_bytes = 1ull << 30;  // request body → 413 when over (0 = none)
    duration header_timeout = std::chrono::seconds{10};  // whole header must arrive → 408
    duration body_timeout = std::chrono::seconds{60};    // no body progress for this long → close
    duration keepalive_timeout = std::chrono::seconds{75};  // idle client connection closed after
    duration drain_timeout = std::chrono::seconds{30};  // SIGTERM: in-flight requests get this long
    std::size_t max_connections = 10000;     // client connections per worker; accept pauses above
    std::size_t request_buffer = 64 * 1024;  // bodies up to this are read whole before the origin
    std::uint64_t body_min_rate = 4 * 1024;  // bytes/s a larger body streams at, at least (0 = off)
    duration tunnel_idle_timeout = std::chrono::minutes{5};  // a silent WebSocket tunnel closes
    duration body_deadline = std::chrono::minutes{10};  // a whole request body → 408 (0 = none)
    std::uint64_t response_min_rate = 4 * 1024;  // bytes/s a relayed response goes out at (0 = off)
    std::size_t request_buffer_budget =
        32 * 1024 * 1024;  // buffered bodies per worker; past → stream
    std::uint32_t http2_max_concurrent_streams = 128;  // per HTTP/2 connection (SETTINGS)
};

struct node_info {
    std::string id;                    // default: the host name
    std::string datacenter = "local";  // groups nodes in the room state
};

// One cookie key: exactly one of secret_file / secret_env; 32 bytes, base64.
struct cookie_key {
    std::string id;           // short id carried in clear in the cookie (1-8 chars, [A-Za-z0-9_-])
    std::string secret_file;  // file holding the base64 key
    std::string secret_env;   // environment variable holding the base64 key
};

// What a cookie is bound to besides its room (`cookie.bind`).
enum class cookie_binding {
    none,    // usable from anywhere
    prefix,  // usable only from the visitor's network: the /24 (IPv4) or /56 (IPv6) it came from
};

struct cookie_settings {
    std::vector<cookie_key> keys;  // first encrypts, all decrypt; empty = generated key file
    std::string key_file;          // generated key file; default "<config dir>/waitroom.key"
    cookie_binding bind = cookie_binding::none;  // YAML key: bind
};

enum class state_backend { local, redis };

struct state_settings {
    state_backend backend = state_backend::local;
    std::string url = "redis://127.0.0.1:6379/0";       // redis only; its password shown as ***
    duration sync_interval = std::chrono::seconds{1};   // push deltas / pull state / lease
    duration timeout = std::chrono::milliseconds{500};  // per store call
    // Parts of `url`, filled by the loader.
    std::string redis_host = "127.0.0.1";
    std::uint16_t redis_port = 6379;
    unsigned redis_db = 0;
    std::string redis_username;  // "" = none (AUTH with the password only)
    std::string redis_password;  // "" = no AUTH
    // Redis Sentinel: the sentinels to ask for the master of `master_name` (the url's host and
    // port are then unused; its user, password and db still apply to the master).
    std::vector<std::string> sentinels;  // "host:port" each
    std::string master_name;
    // Redis Cluster: seed nodes to read the slot map from (the url's host and port unused).
    std::vector<std::string> cluster_nodes;  // "host:port" each
};

struct admin_settings {
    std::string listen = "127.0.0.1:9090";  // "" disables the admin listener
    std::string token_file;                 // bearer token file (mode 0600 or stricter)
    std::string token_env;                  // bearer token environment variable
    // Host names the API answers to without a token, besides loopback literals and localhost
    // (lowercase, no port); unused with a token.
    std::vector<std::string> allowed_hosts;
};

struct logging_settings {
    std::string level = "info";  // trace | debug | info | warn | error | critical | off
    std::string access_log;      // path of a JSON-lines access log; "" = off, "-" = stdout
};

// Test-only settings; documented in the README, never for production.
struct testing_settings {
    double time_scale = 1.0;  // the product's clock runs this many times faster than real time
};

struct route {
    std::string host;        // "" = any host ("*" is stored as "")
    std::string path = "/";  // path prefix
};

// Shortest secret a header bypass rule accepts.
inline constexpr std::size_t min_bypass_secret = 16;

// A bypass rule: the request goes straight to the origin, uncounted, when it matches.
struct bypass_rule {
    enum class kind { path_prefix, header, ip, method };
    kind type = kind::path_prefix;
    std::string value;         // prefix, header name, CIDR or method
    std::string header_value;  // header: the secret the field must equal (>= 16 characters)
    // ip: the parsed CIDR (16 bytes, IPv4 as v4-mapped IPv6) and its prefix length.
    std::array<std::uint8_t, 16> net{};
    unsigned prefix_len = 0;
};

enum class queueing_method { fifo, random, passthrough, reject };

// What happens to a queued visitor whose cookie was flagged for refreshing far faster than its
// Refresh asks (`abuse_action`).
enum class abuse_action {
    off,             // nothing is counted or flagged
    log,             // flagged, counted in metrics and logged; treated like anyone else
    slow,            // flagged visitors are told to come back, and drawn, far less often
    infinite_queue,  // flagged visitors see the queue page and are never admitted
};

// Proof of work on joining (`challenge`): a new visitor who would be queued first solves a
// SHA-256 puzzle, whose difficulty (leading zero bits) rises with the queue's length.
struct challenge_settings {
    bool enabled = false;
    unsigned min_difficulty = 14;  // bits asked while the queue is short
    unsigned max_difficulty = 18;  // bits asked at most, however long the queue
};

enum class same_site { auto_, lax, strict, none };
enum class secure_mode { auto_, always, never };

struct cookie_attributes {
    same_site samesite = same_site::auto_;
    secure_mode secure = secure_mode::auto_;
};

// A scheduled event: fields left unset fall back to the room's.
struct event {
    std::string name;
    std::string description;
    std::optional<time_point> prequeue_start_time;
    time_point event_start_time;
    time_point event_end_time;
    std::optional<std::uint32_t> total_active_users;
    std::optional<std::uint32_t> new_users_per_minute;
    std::optional<duration> session_duration;
    std::optional<bool> disable_session_renewal;
    // Qualified: a member named like its type must not use the unqualified type name.
    std::optional<::waitroom::config::queueing_method> queueing_method;
    std::optional<bool> suspended;
    std::optional<std::string> custom_page_html;
    bool shuffle_at_event_start = false;
};

struct room {
    std::string id;  // default: slug of name
    std::string name;
    std::string description;
    std::string host;        // "" = any host
    std::string path = "/";  // path prefix; the most specific room wins
    std::vector<route> additional_routes;
    bool case_insensitive_paths = false;     // path and routes match ignoring ASCII case
    std::uint32_t total_active_users = 0;    // required, > 0
    std::uint32_t new_users_per_minute = 0;  // required, > 0
    duration session_duration = std::chrono::minutes{5};
    bool disable_session_renewal = false;
    queueing_method method = queueing_method::fifo;  // YAML key: queueing_method
    bool queue_all = false;
    bool suspended = false;
    std::uint16_t queueing_status_code = 200;  // 200 | 202 | 429
    bool json_response_enabled = false;
    // The built-in queue page plays a short sound when the visitor is let in (off: silent).
    bool admission_sound_enabled = false;
    duration refresh_interval = std::chrono::seconds{20};
    std::string custom_page_html;  // template file; "" = default template
    std::string default_template_language = "en-US";
    std::string cookie_suffix;       // cookie becomes _cfwaitingroom_<suffix>
    cookie_attributes cookie_attrs;  // YAML key: cookie_attributes
    bool revoke_enabled = false;     // YAML: enabled_origin_commands: [revoke]
    ::waitroom::config::abuse_action abuse = abuse_action::off;  // YAML key: abuse_action
    challenge_settings challenge;                                // YAML key: challenge
    std::vector<bypass_rule> bypass;
    std::vector<event> events;
};

struct config {
    std::string source_path;  // file this was loaded from ("" for inline)
    std::string base_dir;     // absolute folder relative paths in the file were resolved against
    std::vector<listener> listen{listener{}};
    // Peers whose X-Forwarded-For and X-Forwarded-Proto are believed (load balancers, CDNs).
    std::vector<cidr> trusted_proxies;
    forwarded_mode forwarded_headers = forwarded_mode::overwrite;  // for untrusted peers
    ::waitroom::config::origin origin;
    unsigned threads = 0;  // worker threads; 0 = auto (one per core)
    node_info node;
    cookie_settings cookie;
    state_settings state;
    admin_settings admin;
    logging_settings logging;
    ::waitroom::config::limits limits;
    testing_settings testing;
    std::vector<room> rooms;
};

using snapshot = std::shared_ptr<const config>;

}  // namespace waitroom::config
