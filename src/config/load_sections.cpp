// The top-level sections of a config file: listen, trusted_proxies, origin, node, cookie, state,
// admin, logging, limits and testing.

#include "load_sections.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "waitroom/config/values.hpp"
#include "waitroom/util/request_target.hpp"

namespace waitroom::config::detail {

namespace {

constexpr std::string_view listen_hint =
    "must be \"host:port\" or \"[IPv6]:port\", like 0.0.0.0:8080 or [::]:8080";

std::optional<host_port> read_address(loader& l, const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
        if (auto hp = parse_host_port(n.Scalar())) {
            return hp;
        }
    }
    l.report(n, path, std::string(listen_hint));
    return std::nullopt;
}

}  // namespace

void read_listener(loader& l, const YAML::Node& n, const std::string& path, listener& out) {
    if (n.IsScalar()) {
        if (auto hp = read_address(l, n, path)) {
            out.host = hp->host;
            out.port = hp->port;
        }
        return;
    }
    fields f(l, n, path, {"address", "tls", "proxy_protocol", "http2", "h2c"});
    if (!f.ok() || n.IsNull()) {
        if (n.IsNull()) {
            l.report(n, path, std::string(listen_hint));
        }
        return;
    }
    if (auto a = f.get("address")) {
        if (auto hp = read_address(l, *a, f.at("address"))) {
            out.host = hp->host;
            out.port = hp->port;
        }
    } else {
        l.report(n, f.at("address"), "is required");
    }
    if (auto t = f.get("tls")) {
        read_listener_tls(l, *t, f.at("tls"), out.tls);
    }
    l.set_bool(f, "proxy_protocol", out.proxy_protocol);
    l.set_bool(f, "http2", out.http2);
    l.set_bool(f, "h2c", out.h2c);
    // Each names the HTTP/2 of one kind of listener; on the other kind it would do nothing.
    if (auto v = f.get("http2"); v && !f.get("tls")) {
        l.report(*v, f.at("http2"), "applies to TLS listeners only (plain listeners: h2c)");
    }
    if (auto v = f.get("h2c"); v && f.get("tls")) {
        l.report(*v, f.at("h2c"), "applies to plain listeners only (TLS listeners: http2)");
    }
}

void read_trusted_proxies(loader& l, const YAML::Node& n, std::vector<cidr>& out) {
    if (!l.list(n, "trusted_proxies")) {
        return;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        auto c = item.IsScalar() ? parse_cidr(item.Scalar()) : std::nullopt;
        if (!c) {
            l.report(item, "trusted_proxies[" + std::to_string(i) + "]",
                     "must be an IP address or CIDR like 10.0.0.0/8 or 2001:db8::/32");
            continue;
        }
        out.push_back(*c);
    }
}

namespace {

// One server's URL (origin.url, origin.servers[i].url) into `out`; false when it is bad.
bool read_server_url(loader& l, const YAML::Node& n, const std::string& path, origin_server& out) {
    auto url = n.IsScalar() ? parse_http_url(n.Scalar()) : std::nullopt;
    if (url && !url->base_path.empty() && !util::is_canonical_path(url->base_path)) {
        // The origin must receive a canonical path: base path + canonical request path.
        l.report(n, path, std::string(canonical_path_hint));
        return false;
    }
    if (!url) {
        l.report(n, path,
                 "must be a URL like http://127.0.0.1:3000 or https://shop.internal/base "
                 "(http or https, no query)");
        return false;
    }
    out.url = n.Scalar();
    out.tls = url->tls;
    out.host = url->host;
    out.port = url->port;
    out.base_path = url->base_path;
    return true;
}

void use_server(origin& o, const origin_server& s) {
    o.url = s.url;
    o.tls = s.tls;
    o.host = s.host;
    o.port = s.port;
    o.base_path = s.base_path;
}

// origin.servers: a non-empty list of {url, weight}, each URL once.
void read_servers(loader& l, const YAML::Node& n, const std::string& path, origin& out) {
    if (!l.list(n, path)) {
        return;
    }
    if (n.size() == 0) {
        l.report(n, path, "must list at least one server ({url: ..., weight: 1})");
        return;
    }
    for (std::size_t i = 0; i < n.size(); ++i) {
        const YAML::Node item = n[i];
        const std::string at = path + "[" + std::to_string(i) + "]";
        fields f(l, item, at, {"url", "weight"});
        if (!f.ok()) {
            continue;
        }
        origin_server s;
        auto u = f.get("url");
        if (!u) {
            l.report(item, f.at("url"), "is required");
            continue;
        }
        const bool good = read_server_url(l, *u, f.at("url"), s);
        l.set_integer<unsigned>(f, "weight", s.weight, 1, 1000,
                                "must be an integer from 1 to 1000");
        if (!good) {
            continue;
        }
        for (std::size_t j = 0; j < out.servers.size(); ++j) {
            if (out.servers[j].url == s.url) {
                l.report(*u, f.at("url"), "names the same server as an earlier item");
            }
        }
        out.servers.push_back(std::move(s));
    }
}

void read_health_check(loader& l, const YAML::Node& n, const std::string& path, health_check& out) {
    fields f(l, n, path, {"path", "interval", "timeout", "healthy", "unhealthy"});
    if (!f.ok()) {
        return;
    }
    out.enabled = true;
    if (auto v = f.get("path")) {
        auto s = l.string(*v, f.at("path"));
        if (s && (s->empty() || s->front() != '/' || s->size() > 1024 ||
                  !charset_ok(*s, "/-._~%?=&+:@!$'()*,;"))) {
            l.report(*v, f.at("path"),
                     "must be a path like /healthz (at most 1024 characters: letters, digits "
                     "and / - . _ ~ % ? = & + : @ ! $ ' ( ) * , ;)");
        } else if (s) {
            out.path = *s;
        }
    }
    l.set_duration(f, "interval", out.interval, std::chrono::milliseconds{10});
    l.set_duration(f, "timeout", out.timeout, std::chrono::milliseconds{1});
    l.set_integer<unsigned>(f, "healthy", out.healthy, 1, 100, "must be an integer from 1 to 100");
    l.set_integer<unsigned>(f, "unhealthy", out.unhealthy, 1, 100,
                            "must be an integer from 1 to 100");
    if (out.timeout > out.interval) {
        l.report(f.get("timeout") ? *f.get("timeout") : n, f.at("timeout"),
                 "must not be longer than interval (" + loader::describe(out.interval) +
                     "): a probe ends before the next one starts");
    }
}

// The keys of origin that choose and watch its servers.
void read_balancing(loader& l, const fields& f, origin& out) {
    if (auto v = f.get("servers")) {
        read_servers(l, *v, f.at("servers"), out);
        if (f.get("url")) {
            l.report(*v, f.at("servers"),
                     "set only one of origin.url (one server) and origin.servers");
        } else if (!out.servers.empty()) {
            use_server(out, out.servers.front());
        }
    }
    if (auto v = f.get("balance")) {
        if (auto b = l.choice<balance_policy>(*v, f.at("balance"),
                                              {{"round_robin", balance_policy::round_robin},
                                               {"least_request", balance_policy::least_request}})) {
            out.balance = *b;
        }
    }
    l.set_integer<unsigned>(f, "eject_after", out.eject_after, 0, 1000,
                            "must be an integer from 0 (never) to 1000");
    l.set_duration(f, "eject_time", out.eject_time, std::chrono::milliseconds{1});
    l.set_duration(f, "max_eject_time", out.max_eject_time, std::chrono::milliseconds{1});
    if (out.max_eject_time < out.eject_time) {
        auto v = f.get("max_eject_time") ? f.get("max_eject_time") : f.get("eject_time");
        l.report(*v, f.at("max_eject_time"),
                 "must be at least eject_time (" + loader::describe(out.eject_time) + ")");
    }
    if (auto v = f.get("health_check")) {
        read_health_check(l, *v, f.at("health_check"), out.health_check);
    }
}

}  // namespace

void read_origin(loader& l, const YAML::Node& n, origin& out) {
    fields f(l, n, "origin",
             {"url",
              "servers",
              "balance",
              "eject_after",
              "eject_time",
              "max_eject_time",
              "health_check",
              "connect_timeout",
              "timeout",
              "max_connections",
              "idle_timeout",
              "pool_wait_timeout",
              "max_pool_waiters",
              "max_connections_per_client",
              "max_tunnels",
              "verify_tls",
              "ca_file",
              "server_name",
              "host_header",
              "unknown_hosts"});
    if (!f.ok()) {
        return;
    }
    if (auto u = f.get("url")) {
        origin_server s;
        if (read_server_url(l, *u, f.at("url"), s)) {
            use_server(out, s);
        }
    }
    read_balancing(l, f, out);
    l.set_duration(f, "connect_timeout", out.connect_timeout, duration{1});
    l.set_duration(f, "timeout", out.timeout, duration{1});
    l.set_integer<std::size_t>(f, "max_connections", out.max_connections, 1, 1'000'000);
    l.set_duration(f, "idle_timeout", out.idle_timeout, duration{1});
    l.set_duration(f, "pool_wait_timeout", out.pool_wait_timeout, duration{1});
    l.set_integer<std::size_t>(f, "max_pool_waiters", out.max_pool_waiters, 0, 10'000'000,
                               "must be an integer ≥ 0");
    l.set_integer<std::size_t>(f, "max_connections_per_client", out.max_connections_per_client, 0,
                               1'000'000, "must be an integer ≥ 0");
    l.set_integer<std::size_t>(f, "max_tunnels", out.max_tunnels, 0, 1'000'000,
                               "must be an integer ≥ 0");
    l.set_bool(f, "verify_tls", out.verify_tls);
    l.set_path(f, "ca_file", out.ca_file);
    l.set_string(f, "server_name", out.server_name);
    if (auto v = f.get("host_header")) {
        if (auto m = l.choice<host_header_mode>(
                *v, f.at("host_header"),
                {{"client", host_header_mode::client}, {"origin", host_header_mode::origin}})) {
            out.host_header = *m;
        }
    }
    if (auto v = f.get("unknown_hosts")) {
        if (auto m = l.choice<unknown_hosts_policy>(
                *v, f.at("unknown_hosts"),
                {{"reject", unknown_hosts_policy::reject}, {"pass", unknown_hosts_policy::pass}})) {
            out.unknown_hosts = *m;
        }
    }
}

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
        return "waitroomd";
    }
    return buf;
}

void read_node(loader& l, const YAML::Node& n, node_info& out) {
    fields f(l, n, "node", {"id", "datacenter"});
    if (!f.ok()) {
        return;
    }
    for (auto key : {"id", "datacenter"}) {
        if (auto v = f.get(key)) {
            auto s = l.string(*v, f.at(key));
            if (!s) {
                continue;
            }
            if (s->empty() || s->size() > 64 || !charset_ok(*s, "_.-")) {
                l.report(*v, f.at(key), "must be 1 to 64 characters of A-Z a-z 0-9 _ . -");
                continue;
            }
            (std::string_view(key) == "id" ? out.id : out.datacenter) = *s;
        }
    }
}

void read_cookie(loader& l, const YAML::Node& n, cookie_settings& out) {
    fields f(l, n, "cookie", {"keys", "key_file", "bind"});
    if (!f.ok()) {
        return;
    }
    if (auto v = f.get("bind")) {
        if (auto b = l.choice<cookie_binding>(
                *v, f.at("bind"),
                {{"none", cookie_binding::none}, {"prefix", cookie_binding::prefix}})) {
            out.bind = *b;
        }
    }
    l.set_path(f, "key_file", out.key_file);
    if (!f.get("keys")) {
        l.check_secret_mode(f, "key_file", out.key_file);
    }
    auto keys = f.get("keys");
    if (!keys || !l.list(*keys, f.at("keys"))) {
        return;
    }
    std::map<std::string, std::size_t> ids;
    const YAML::Node seq = *keys;
    for (std::size_t i = 0; i < seq.size(); ++i) {
        const YAML::Node kn = seq[i];
        std::string path = f.at("keys") + "[" + std::to_string(i) + "]";
        fields kf(l, kn, path, {"id", "secret_file", "secret_env"});
        if (!kf.ok()) {
            continue;
        }
        cookie_key key;
        if (auto id = kf.get("id")) {
            if (auto s = l.string(*id, kf.at("id"))) {
                if (s->empty() || s->size() > 8 || !charset_ok(*s, "_-")) {
                    l.report(*id, kf.at("id"), "must be 1 to 8 characters of A-Z a-z 0-9 _ -");
                } else if (auto [pos, fresh] = ids.emplace(*s, i); !fresh) {
                    l.report(*id, kf.at("id"),
                             "duplicate key id \"" + *s + "\" (also cookie.keys[" +
                                 std::to_string(pos->second) + "])");
                } else {
                    key.id = *s;
                }
            }
        } else {
            l.report(kn, kf.at("id"), "is required");
        }
        l.set_path(kf, "secret_file", key.secret_file);
        l.check_secret_mode(kf, "secret_file", key.secret_file);
        l.set_string(kf, "secret_env", key.secret_env);
        bool has_file = kf.get("secret_file").has_value();
        bool has_env = kf.get("secret_env").has_value();
        if (has_file == has_env) {
            l.report(has_env ? *kf.get("secret_env") : kn, path,
                     "needs exactly one of secret_file or secret_env");
        } else if (has_env && !key.secret_env.empty() && !charset_ok(key.secret_env, "_")) {
            l.report(*kf.get("secret_env"), kf.at("secret_env"),
                     "must be an environment variable name (A-Z a-z 0-9 _)");
        }
        out.keys.push_back(std::move(key));
    }
}

namespace {

// A non-empty list of "host:port" (state.sentinels, state.cluster_nodes).
void read_redis_nodes(loader& l, fields& f, const char* key, std::vector<std::string>& out) {
    auto v = f.get(key);
    if (!v || !l.list(*v, f.at(key))) {
        return;
    }
    const YAML::Node seq = *v;
    if (seq.size() == 0) {
        l.report(seq, f.at(key), "must list at least one \"host:port\"");
    }
    for (std::size_t i = 0; i < seq.size(); ++i) {
        std::string path = f.at(key) + "[" + std::to_string(i) + "]";
        auto s = l.string(seq[i], path);
        if (!s) {
            continue;
        }
        auto hp = parse_host_port(*s);
        if (!hp || hp->host.empty() || hp->port == 0) {
            l.report(seq[i], path, "must be \"host:port\", like 127.0.0.1:26379");
            continue;
        }
        out.push_back(*s);
    }
}

}  // namespace

void read_state(loader& l, const YAML::Node& n, state_settings& out, YAML::Mark& backend_mark) {
    fields f(l, n, "state",
             {"backend", "url", "sync_interval", "timeout", "sentinels", "master_name",
              "cluster_nodes"});
    if (!f.ok()) {
        return;
    }
    if (auto b = f.get("backend")) {
        backend_mark = b->Mark();
        if (auto v = l.choice<state_backend>(
                *b, f.at("backend"),
                {{"local", state_backend::local}, {"redis", state_backend::redis}})) {
            out.backend = *v;
        }
    }
    if (auto u = f.get("url")) {
        auto url = u->IsScalar() ? parse_redis_url(u->Scalar()) : std::nullopt;
        if (url) {
            // Kept redacted: whatever logs or shows the URL cannot leak the password, which
            // lives in redis_password alone.
            out.url = redact_url(u->Scalar());
            out.redis_host = url->host;
            out.redis_port = url->port;
            out.redis_db = url->db;
            out.redis_username = url->username;
            out.redis_password = url->password;
        } else {
            l.report(*u, f.at("url"),
                     "must be a URL like redis://[user:password@]127.0.0.1:6379/0 (in the user and "
                     "password, write @ / ? # % as %40 %2F %3F %23 %25)");
        }
    }
    l.set_duration(f, "sync_interval", out.sync_interval, std::chrono::milliseconds{10});
    l.set_duration(f, "timeout", out.timeout, std::chrono::milliseconds{1});
    read_redis_nodes(l, f, "sentinels", out.sentinels);
    read_redis_nodes(l, f, "cluster_nodes", out.cluster_nodes);
    if (auto v = f.get("master_name")) {
        if (auto s = l.string(*v, f.at("master_name")); s && !s->empty()) {
            out.master_name = *s;
        } else if (s) {
            l.report(*v, f.at("master_name"), "must not be empty");
        }
    }
    if (!out.sentinels.empty() && out.master_name.empty()) {
        l.report(*f.get("sentinels"), f.at("master_name"),
                 "is required with state.sentinels (the name the sentinels monitor)");
    }
    if (out.sentinels.empty() && f.get("master_name")) {
        l.report(*f.get("master_name"), f.at("master_name"),
                 "needs state.sentinels (the sentinels that know the master)");
    }
    if (!out.sentinels.empty() && !out.cluster_nodes.empty()) {
        l.report(*f.get("cluster_nodes"), f.at("cluster_nodes"),
                 "cannot go with state.sentinels: a cluster fails over by itself");
    }
    if (!out.cluster_nodes.empty() && out.redis_db != 0) {
        l.report(*f.get("cluster_nodes"), f.at("cluster_nodes"),
                 "needs database 0 in state.url: Redis Cluster has no other");
    }
    for (const char* key : {"sentinels", "master_name", "cluster_nodes"}) {
        if (auto v = f.get(key); v && out.backend != state_backend::redis) {
            l.report(*v, f.at(key), "needs state.backend: redis");
        }
    }
}

void read_admin(loader& l, const YAML::Node& n, admin_settings& out) {
    fields f(l, n, "admin", {"listen", "token_file", "token_env", "allowed_hosts"});
    if (!f.ok()) {
        return;
    }
    std::optional<host_port> listen;
    if (auto v = f.get("listen")) {
        if (v->IsNull() || (v->IsScalar() && v->Scalar().empty())) {
            out.listen.clear();
        } else if ((listen = read_address(l, *v, f.at("listen")))) {
            out.listen = v->Scalar();
        }
    }
    l.set_path(f, "token_file", out.token_file);
    l.check_secret_mode(f, "token_file", out.token_file);
    l.set_string(f, "token_env", out.token_env);
    if (f.get("token_file") && f.get("token_env")) {
        l.report(*f.get("token_env"), f.at("token_env"),
                 "set only one of token_file and token_env");
    }
    // Without a token the admin API trusts whoever reaches it: only this machine may.
    const bool has_token = !out.token_file.empty() || !out.token_env.empty();
    if (listen && !has_token && !is_loopback_host(listen->host)) {
        l.report(*f.get("listen"), f.at("listen"),
                 "a listener other than loopback (127.0.0.1, [::1], localhost) needs a token: "
                 "set admin.token_file or admin.token_env");
    }
    if (auto v = f.get("allowed_hosts"); v && l.list(*v, f.at("allowed_hosts"))) {
        const YAML::Node seq = *v;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            std::string path = f.at("allowed_hosts") + "[" + std::to_string(i) + "]";
            auto s = l.string(seq[i], path);
            if (!s) {
                continue;
            }
            // A bare name or address, as it appears in a Host header without its port.
            auto hp = parse_authority(*s);
            if (!hp || (hp->host != *s && "[" + hp->host + "]" != *s)) {
                l.report(seq[i], path,
                         "must be a host name or address without port, like admin.internal");
                continue;
            }
            out.allowed_hosts.push_back(lowercase(hp->host));
        }
    }
}

void read_logging(loader& l, const YAML::Node& n, logging_settings& out) {
    fields f(l, n, "logging", {"level", "access_log"});
    if (!f.ok()) {
        return;
    }
    if (auto v = f.get("level")) {
        if (auto s = l.choice<std::string_view>(*v, f.at("level"),
                                                {{"trace", "trace"},
                                                 {"debug", "debug"},
                                                 {"info", "info"},
                                                 {"warn", "warn"},
                                                 {"error", "error"},
                                                 {"critical", "critical"},
                                                 {"off", "off"}})) {
            out.level = std::string(*s);
        }
    }
    if (auto v = f.get("access_log")) {
        if (auto s = l.string(*v, f.at("access_log"))) {
            out.access_log = (s->empty() || *s == "-") ? *s : l.resolve(*s);
        }
    }
}

void read_limits(loader& l, const YAML::Node& n, limits& out) {
    fields f(l, n, "limits",
             {"max_header_bytes", "max_body_bytes", "header_timeout", "body_timeout",
              "keepalive_timeout", "drain_timeout", "max_connections", "request_buffer",
              "body_min_rate", "tunnel_idle_timeout", "body_deadline", "response_min_rate",
              "request_buffer_budget", "http2_max_concurrent_streams"});
    if (!f.ok()) {
        return;
    }
    if (auto v = f.get("max_header_bytes")) {
        if (auto s = l.size(*v, f.at("max_header_bytes"), 1,
                            std::numeric_limits<std::uint32_t>::max())) {
            out.max_header_bytes = static_cast<std::size_t>(*s);
        }
    }
    if (auto v = f.get("max_body_bytes")) {
        if (auto s =
                l.size(*v, f.at("max_body_bytes"), 0, std::numeric_limits<std::uint64_t>::max())) {
            out.max_body_bytes = *s;
        }
    }
    l.set_duration(f, "header_timeout", out.header_timeout, duration{1});
    l.set_duration(f, "body_timeout", out.body_timeout, duration{1});
    l.set_duration(f, "keepalive_timeout", out.keepalive_timeout, duration{1});
    l.set_duration(f, "drain_timeout", out.drain_timeout, duration{0});
    l.set_integer<std::size_t>(f, "max_connections", out.max_connections, 1, 10'000'000);
    l.set_integer<std::uint32_t>(f, "http2_max_concurrent_streams",
                                 out.http2_max_concurrent_streams, 1, 1000);
    if (auto v = f.get("request_buffer")) {
        if (auto s = l.size(*v, f.at("request_buffer"), 16 * 1024, 64 * 1024 * 1024)) {
            out.request_buffer = static_cast<std::size_t>(*s);
        }
    }
    if (auto v = f.get("body_min_rate")) {
        if (auto s = l.size(*v, f.at("body_min_rate"), 0, 1ull << 40)) {
            out.body_min_rate = *s;
        }
    }
    l.set_duration(f, "tunnel_idle_timeout", out.tunnel_idle_timeout, duration{1});
    l.set_duration(f, "body_deadline", out.body_deadline, duration{0});
    if (auto v = f.get("response_min_rate")) {
        if (auto s = l.size(*v, f.at("response_min_rate"), 0, 1ull << 40)) {
            out.response_min_rate = *s;
        }
    }
    if (auto v = f.get("request_buffer_budget")) {
        if (auto s = l.size(*v, f.at("request_buffer_budget"), 0, 1ull << 40)) {
            out.request_buffer_budget = static_cast<std::size_t>(*s);
        }
    }
}

void read_testing(loader& l, const YAML::Node& n, testing_settings& out) {
    fields f(l, n, "testing", {"time_scale"});
    if (!f.ok()) {
        return;
    }
    if (auto v = f.get("time_scale")) {
        double d = 0;
        bool good = false;
        if (v->IsScalar()) {
            const std::string& s = v->Scalar();
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
            good = ec == std::errc{} && end == s.data() + s.size() && std::isfinite(d) && d > 0 &&
                   d <= 1e6;
        }
        if (good) {
            out.time_scale = d;
        } else {
            l.report(*v, f.at("time_scale"), "must be a number greater than 0 (at most 1000000)");
        }
    }
}

}  // namespace waitroom::config::detail
