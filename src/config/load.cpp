// YAML → validated config. The walk never stops at the first problem: each one is recorded with
// the node's position and key path, so an operator fixes the whole file in one pass.

#include "waitroom/config/load.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>

#include "waitroom/config/secret_file.hpp"
#include "waitroom/config/values.hpp"
#include "waitroom/util/clock.hpp"
#include "waitroom/util/request_target.hpp"

namespace waitroom::config {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view duration_hint = "must be a duration like 90s or 5m";
constexpr std::string_view size_hint = "must be a size like 16KiB, 1MiB or a number of bytes";
constexpr std::string_view time_hint =
    "must be an RFC 3339 time like 2026-12-01T10:00:00Z or 2026-12-01T11:00:00+01:00";
constexpr std::string_view canonical_path_hint =
    "must be a canonical path like /shop: no empty, . or .. segments, no ;parameters, "
    "no escaped letters, digits or -._~, escapes in upper-case hex (see README, Routing)";
constexpr std::string_view listen_hint =
    "must be \"host:port\" or \"[IPv6]:port\", like 0.0.0.0:8080 or [::]:8080";

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

bool charset_ok(std::string_view s, std::string_view extra) {
    return std::all_of(s.begin(), s.end(), [&](char c) {
        auto u = static_cast<unsigned char>(c);
        return (u < 0x80 && std::isalnum(u)) || extra.find(c) != std::string_view::npos;
    });
}

std::string lowercase(std::string s) {
    for (char& c : s) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

template <class T>
void assign(T& dst, T v) {
    dst = std::move(v);
}
template <class T>
void assign(std::optional<T>& dst, T v) {
    dst = std::move(v);
}

class loader;

// The keys of one YAML mapping. Unknown and duplicate keys are reported when it is built;
// get() hands out the values of known keys.
class fields {
  public:
    fields(loader& l, const YAML::Node& node, std::string path,
           std::initializer_list<std::string_view> known);

    bool ok() const { return ok_; }
    std::optional<YAML::Node> get(std::string_view key) const {
        for (const auto& e : entries_) {
            if (e.key == key) {
                return e.value;
            }
        }
        return std::nullopt;
    }
    // Key path of a child, e.g. "rooms[0]" + "name" → "rooms[0].name".
    std::string at(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }

  private:
    struct entry {
        std::string key;
        YAML::Node value;
    };
    std::string path_;
    std::vector<entry> entries_;
    bool ok_ = true;
};

class loader {
  public:
    loader(std::string file, fs::path base_dir)
        : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

    std::vector<problem>& problems() { return problems_; }

    void report(const YAML::Mark& m, std::string path, std::string message) {
        problem p;
        p.file = file_;
        if (!m.is_null()) {
            p.line = m.line + 1;
            p.column = m.column + 1;
        }
        p.path = std::move(path);
        p.message = std::move(message);
        problems_.push_back(std::move(p));
    }
    void report(const YAML::Node& n, std::string path, std::string message) {
        YAML::Mark m = n.Mark();
        if (n.IsNull()) {
            for (const auto& [node, key_mark] : null_values_) {
                if (node.is(n)) {
                    m = key_mark;
                    break;
                }
            }
        }
        report(m, std::move(path), std::move(message));
    }

    // yaml-cpp marks an empty value (`key:`) at the token after it, often on the next line;
    // pointing at the key reads better.
    void note_null_value(const YAML::Node& value, const YAML::Mark& key_mark) {
        null_values_.emplace_back(value, key_mark);
    }

    // ---- scalar readers: each reports and returns nullopt on a bad value ----

    std::optional<std::string> string(const YAML::Node& n, const std::string& path) {
        if (n.IsNull()) {
            return std::string{};
        }
        if (!n.IsScalar()) {
            report(n, path, "must be a string");
            return std::nullopt;
        }
        return n.Scalar();
    }

    std::optional<bool> boolean(const YAML::Node& n, const std::string& path) {
        if (n.IsScalar()) {
            const std::string& s = n.Scalar();
            if (s == "true" || s == "True" || s == "TRUE") {
                return true;
            }
            if (s == "false" || s == "False" || s == "FALSE") {
                return false;
            }
        }
        report(n, path, "must be true or false");
        return std::nullopt;
    }

    std::optional<std::uint64_t> integer(const YAML::Node& n, const std::string& path,
                                         std::uint64_t min, std::uint64_t max,
                                         std::string_view what) {
        std::uint64_t v = 0;
        if (n.IsScalar()) {
            const std::string& s = n.Scalar();
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (ec == std::errc{} && end == s.data() + s.size() && !s.empty() && v >= min &&
                v <= max) {
                return v;
            }
            if (ec == std::errc{} && end == s.data() + s.size() && !s.empty() && v > max) {
                report(n, path, std::string(what) + " no larger than " + std::to_string(max));
                return std::nullopt;
            }
        }
        report(n, path, std::string(what));
        return std::nullopt;
    }

    std::optional<duration> dur(const YAML::Node& n, const std::string& path, duration min) {
        if (n.IsScalar()) {
            const std::string& s = n.Scalar();
            if (auto d = parse_duration(s)) {
                if (*d >= min) {
                    return d;
                }
                report(n, path, "must be at least " + describe(min));
                return std::nullopt;
            }
            if (!s.empty() &&
                std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
                report(n, path,
                       std::string(duration_hint) + "; a bare number has no unit (did you mean " +
                           s + "s?)");
                return std::nullopt;
            }
        }
        report(n, path, std::string(duration_hint));
        return std::nullopt;
    }

    std::optional<std::uint64_t> size(const YAML::Node& n, const std::string& path,
                                      std::uint64_t min, std::uint64_t max) {
        if (n.IsScalar()) {
            if (auto v = parse_size(n.Scalar())) {
                if (*v < min) {
                    report(n, path, "must be at least " + std::to_string(min) + " bytes");
                    return std::nullopt;
                }
                if (*v > max) {
                    report(n, path, "must be at most " + std::to_string(max) + " bytes");
                    return std::nullopt;
                }
                return v;
            }
        }
        report(n, path, std::string(size_hint));
        return std::nullopt;
    }

    template <class E>
    std::optional<E> choice(const YAML::Node& n, const std::string& path,
                            std::initializer_list<std::pair<std::string_view, E>> options) {
        if (n.IsScalar()) {
            for (const auto& [name, value] : options) {
                if (n.Scalar() == name) {
                    return value;
                }
            }
        }
        std::string msg = "must be one of ";
        bool first = true;
        for (const auto& o : options) {
            msg += first ? "" : ", ";
            msg += o.first;
            first = false;
        }
        report(n, path, msg);
        return std::nullopt;
    }

    std::optional<time_point> time(const YAML::Node& n, const std::string& path) {
        if (n.IsScalar()) {
            if (auto t = parse_rfc3339(n.Scalar())) {
                return t;
            }
        }
        report(n, path, std::string(time_hint));
        return std::nullopt;
    }

    // A list; null counts as empty. Reports and returns false for anything else.
    bool list(const YAML::Node& n, const std::string& path) {
        if (n.IsSequence() || n.IsNull()) {
            return true;
        }
        report(n, path, "must be a list");
        return false;
    }

    // ---- setters over a mapping: a no-op when the key is absent ----

    template <class Dst>
    void set_string(const fields& f, std::string_view key, Dst& dst) {
        if (auto n = f.get(key)) {
            if (auto v = string(*n, f.at(key))) {
                assign(dst, std::move(*v));
            }
        }
    }
    template <class Dst>
    void set_bool(const fields& f, std::string_view key, Dst& dst) {
        if (auto n = f.get(key)) {
            if (auto v = boolean(*n, f.at(key))) {
                assign(dst, *v);
            }
        }
    }
    template <class T, class Dst>
    void set_integer(const fields& f, std::string_view key, Dst& dst, std::uint64_t min,
                     std::uint64_t max, std::string_view what = "must be a positive integer") {
        if (auto n = f.get(key)) {
            if (auto v = integer(*n, f.at(key), min, max, what)) {
                assign(dst, static_cast<T>(*v));
            }
        }
    }
    template <class Dst>
    void set_duration(const fields& f, std::string_view key, Dst& dst, duration min) {
        if (auto n = f.get(key)) {
            if (auto v = dur(*n, f.at(key), min)) {
                assign(dst, *v);
            }
        }
    }
    // A file path; relative paths resolve against the config file's folder.
    template <class Dst>
    void set_path(const fields& f, std::string_view key, Dst& dst) {
        if (auto n = f.get(key)) {
            if (auto v = string(*n, f.at(key))) {
                assign(dst, v->empty() ? std::string{} : resolve(*v));
            }
        }
    }

    std::string resolve(const std::string& p) const {
        fs::path path(p);
        if (path.is_absolute()) {
            return path.lexically_normal().string();
        }
        return (base_dir_ / path).lexically_normal().string();
    }

    // A secret file that is too open is refused here, at its setting, so that `check` reports
    // it too; the reader checks again on the descriptor it reads (config::read_secret_file).
    void check_secret_mode(const fields& f, std::string_view key, const std::string& file) {
        auto n = f.get(key);
        if (!n || file.empty()) {
            return;
        }
        if (auto problem = secret_file_mode_problem(file); !problem.empty()) {
            report(*n, f.at(key), std::move(problem));
        }
    }

    // Templates are read at load time so that a reload with a missing file fails cleanly.
    void check_readable(const YAML::Node& n, const std::string& path, const std::string& file) {
        std::error_code ec;
        auto st = fs::status(file, ec);
        if (!fs::exists(st)) {
            report(n, path, "file not found: " + file);
        } else if (fs::is_directory(st)) {
            report(n, path, "is a folder, not a file: " + file);
        } else if (!std::ifstream(file, std::ios::binary).good()) {
            report(n, path, "file cannot be read: " + file);
        }
    }

    static std::string describe(duration d) {
        auto ms = d.count();
        if (ms % 60'000 == 0) {
            return std::to_string(ms / 60'000) + "m";
        }
        if (ms % 1000 == 0) {
            return std::to_string(ms / 1000) + "s";
        }
        return std::to_string(ms) + "ms";
    }

  private:
    std::string file_;
    fs::path base_dir_;
    std::vector<problem> problems_;
    std::vector<std::pair<YAML::Node, YAML::Mark>> null_values_;
};

fields::fields(loader& l, const YAML::Node& node, std::string path,
               std::initializer_list<std::string_view> known)
    : path_(std::move(path)) {
    if (node.IsNull()) {
        return;  // `key:` with nothing after it: every default
    }
    if (!node.IsMap()) {
        l.report(node, path_, "must be a mapping of keys to values");
        ok_ = false;
        return;
    }
    std::map<std::string, int> seen;  // key → line of first use
    for (const auto& kv : node) {
        const YAML::Node k = kv.first;
        if (!k.IsScalar()) {
            l.report(k, path_, "keys must be plain names");
            continue;
        }
        std::string key = k.Scalar();
        std::string where = path_.empty() ? key : path_ + "." + key;
        if (auto [pos, fresh] = seen.emplace(key, k.Mark().line + 1); !fresh) {
            l.report(k, where,
                     "duplicate key (first set on line " + std::to_string(pos->second) + ")");
            continue;
        }
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            std::string msg = "unknown key";
            std::string_view best;
            std::size_t best_d = std::max<std::size_t>(2, key.size() / 4) + 1;
            for (auto candidate : known) {
                // The distance is at least the difference in length: a long unknown key costs
                // nothing (it was quadratic in the key's length).
                const std::size_t shortest = std::min(key.size(), candidate.size());
                if (std::max(key.size(), candidate.size()) - shortest >= best_d) {
                    continue;
                }
                std::size_t d = edit_distance(key, candidate);
                if (d < best_d) {
                    best_d = d;
                    best = candidate;
                }
            }
            if (!best.empty()) {
                msg += "; did you mean " + std::string(best) + "?";
            }
            l.report(k, where, msg);
            continue;
        }
        if (kv.second.IsNull()) {
            l.note_null_value(kv.second, k.Mark());
        }
        entries_.push_back({key, kv.second});
    }
}

// ---- sections ----

std::optional<host_port> read_address(loader& l, const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
        if (auto hp = parse_host_port(n.Scalar())) {
            return hp;
        }
    }
    l.report(n, path, std::string(listen_hint));
    return std::nullopt;
}

void read_listener(loader& l, const YAML::Node& n, const std::string& path, listener& out) {
    if (n.IsScalar()) {
        if (auto hp = read_address(l, n, path)) {
            out.host = hp->host;
            out.port = hp->port;
        }
        return;
    }
    fields f(l, n, path, {"address", "tls", "proxy_protocol"});
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
        fields tf(l, *t, f.at("tls"), {"cert", "key"});
        if (tf.ok()) {
            tls_files files;
            for (auto key : {"cert", "key"}) {
                if (!tf.get(key)) {
                    l.report(*t, tf.at(key), "is required (a PEM file)");
                }
            }
            l.set_path(tf, "cert", files.cert);
            l.set_path(tf, "key", files.key);
            out.tls = files;
        }
    }
    l.set_bool(f, "proxy_protocol", out.proxy_protocol);
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

void read_origin(loader& l, const YAML::Node& n, origin& out) {
    fields f(l, n, "origin",
             {"url", "connect_timeout", "timeout", "max_connections", "idle_timeout",
              "pool_wait_timeout", "max_pool_waiters", "max_connections_per_client", "max_tunnels",
              "verify_tls", "ca_file", "server_name", "host_header", "unknown_hosts"});
    if (!f.ok()) {
        return;
    }
    if (auto u = f.get("url")) {
        auto url = u->IsScalar() ? parse_http_url(u->Scalar()) : std::nullopt;
        if (url && !url->base_path.empty() && !util::is_canonical_path(url->base_path)) {
            // The origin must receive a canonical path: base path + canonical request path.
            l.report(*u, f.at("url"), std::string(canonical_path_hint));
        } else if (url) {
            out.url = u->Scalar();
            out.tls = url->tls;
            out.host = url->host;
            out.port = url->port;
            out.base_path = url->base_path;
        } else {
            l.report(*u, f.at("url"),
                     "must be a URL like http://127.0.0.1:3000 or https://shop.internal/base "
                     "(http or https, no query)");
        }
    }
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
    fields f(l, n, "cookie", {"keys", "key_file"});
    if (!f.ok()) {
        return;
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

void read_state(loader& l, const YAML::Node& n, state_settings& out, YAML::Mark& backend_mark) {
    fields f(l, n, "state", {"backend", "url", "sync_interval", "timeout"});
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
            l.report(*u, f.at("url"), "must be a URL like redis://127.0.0.1:6379/0");
        }
    }
    l.set_duration(f, "sync_interval", out.sync_interval, std::chrono::milliseconds{10});
    l.set_duration(f, "timeout", out.timeout, std::chrono::milliseconds{1});
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
    fields f(
        l, n, "limits",
        {"max_header_bytes", "max_body_bytes", "header_timeout", "body_timeout",
         "keepalive_timeout", "drain_timeout", "max_connections", "request_buffer", "body_min_rate",
         "tunnel_idle_timeout", "body_deadline", "response_min_rate", "request_buffer_budget"});
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

constexpr std::uint64_t max_users = 1'000'000'000;

// Per-room bookkeeping for the checks that span rooms (ids, routes).
struct room_marks {
    YAML::Node id_node;  // where a duplicate id is reported
    bool id_given = false;
    // Path, then each additional route: where a clash is reported; none when the route itself
    // was invalid (its clash would only repeat that problem).
    std::vector<std::optional<YAML::Mark>> routes;
};

std::optional<queueing_method> read_method(loader& l, const YAML::Node& n,
                                           const std::string& path) {
    return l.choice<queueing_method>(n, path,
                                     {{"fifo", queueing_method::fifo},
                                      {"random", queueing_method::random},
                                      {"passthrough", queueing_method::passthrough},
                                      {"reject", queueing_method::reject}});
}

// A template path, resolved and checked now so that a reload with a missing file fails cleanly.
template <class Dst>
void read_template(loader& l, const fields& f, Dst& dst) {
    auto v = f.get("custom_page_html");
    if (!v) {
        return;
    }
    auto s = l.string(*v, f.at("custom_page_html"));
    if (!s) {
        return;
    }
    std::string resolved = s->empty() ? std::string{} : l.resolve(*s);
    if (!resolved.empty()) {
        l.check_readable(*v, f.at("custom_page_html"), resolved);
    }
    assign(dst, std::move(resolved));
}

bool valid_host(const std::string& h) {
    return !h.empty() && h.size() <= 253 && charset_ok(h, ".-_") && h.front() != '.' &&
           h.front() != '-';
}

void read_route_host(loader& l, const fields& f, std::string& out) {
    auto v = f.get("host");
    if (!v) {
        return;
    }
    auto s = l.string(*v, f.at("host"));
    if (!s) {
        return;
    }
    if (s->empty() || *s == "*") {
        out.clear();
    } else if (valid_host(lowercase(*s))) {
        out = lowercase(*s);
    } else {
        l.report(*v, f.at("host"), "must be a host name like shop.example.com, or \"*\" for any");
    }
}

void read_route_path(loader& l, const fields& f, std::string& out) {
    auto v = f.get("path");
    if (!v) {
        return;
    }
    auto s = l.string(*v, f.at("path"));
    if (!s) {
        return;
    }
    bool clean = std::none_of(s->begin(), s->end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 || c == '?' || c == '#' || c == 0x7f;
    });
    if (s->empty() || s->front() != '/' || !clean) {
        l.report(*v, f.at("path"), "must be a path starting with \"/\" (no spaces, ? or #)");
        return;
    }
    if (!util::is_canonical_path(*s)) {
        l.report(*v, f.at("path"), std::string(canonical_path_hint));
        return;
    }
    out = *s;
}

void read_bypass(loader& l, const YAML::Node& n, const std::string& path, room& r) {
    fields f(l, n, path, {"path_prefix", "header", "value", "ip", "method"});
    if (!f.ok()) {
        return;
    }
    const char* kinds[] = {"path_prefix", "header", "ip", "method"};
    int count = 0;
    for (auto k : kinds) {
        count += f.get(k) ? 1 : 0;
    }
    if (count != 1) {
        l.report(n, path, "needs exactly one of path_prefix, header, ip, method");
        return;
    }
    bypass_rule rule;
    if (auto v = f.get("value"); v && !f.get("header")) {
        l.report(*v, f.at("value"), "is allowed only with header");
        return;
    }
    if (auto v = f.get("path_prefix")) {
        auto s = l.string(*v, f.at("path_prefix"));
        if (!s) {
            return;
        }
        if (s->empty() || s->front() != '/') {
            l.report(*v, f.at("path_prefix"), "must be a path starting with \"/\"");
            return;
        }
        if (!util::is_canonical_path(*s)) {
            l.report(*v, f.at("path_prefix"), std::string(canonical_path_hint));
            return;
        }
        rule.type = bypass_rule::kind::path_prefix;
        rule.value = *s;
    } else if (auto v = f.get("header")) {
        auto s = l.string(*v, f.at("header"));
        if (!s) {
            return;
        }
        if (s->empty() || !charset_ok(*s, "!#$%&'*+-.^_`|~")) {
            l.report(*v, f.at("header"), "must be a header name like X-Health-Check");
            return;
        }
        rule.type = bypass_rule::kind::header;
        rule.value = *s;
        // Anyone can send a header: only a secret makes the rule more than an open door.
        auto hv = f.get("value");
        if (!hv) {
            l.report(n, f.at("value"),
                     "is required with header: a secret of at least " +
                         std::to_string(min_bypass_secret) + " characters");
            return;
        }
        auto val = l.string(*hv, f.at("value"));
        if (!val) {
            return;
        }
        if (std::any_of(val->begin(), val->end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
            l.report(*hv, f.at("value"), "must not hold control characters");
            return;
        }
        if (val->size() < min_bypass_secret || val->front() == ' ' || val->back() == ' ') {
            l.report(*hv, f.at("value"),
                     "must be a secret of at least " + std::to_string(min_bypass_secret) +
                         " characters, without leading or trailing spaces");
            return;
        }
        rule.header_value = *val;
    } else if (auto v = f.get("ip")) {
        auto c = v->IsScalar() ? parse_cidr(v->Scalar()) : std::nullopt;
        if (!c) {
            l.report(*v, f.at("ip"),
                     "must be an IP address or CIDR like 10.0.0.0/8 or 2001:db8::/32");
            return;
        }
        rule.type = bypass_rule::kind::ip;
        rule.value = v->Scalar();
        rule.net = c->net;
        rule.prefix_len = c->prefix_len;
    } else if (auto v = f.get("method")) {
        auto s = l.string(*v, f.at("method"));
        if (!s) {
            return;
        }
        std::string upper = *s;
        for (char& ch : upper) {
            ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        }
        if (upper.empty() || !charset_ok(upper, "-_")) {
            l.report(*v, f.at("method"), "must be an HTTP method like GET or OPTIONS");
            return;
        }
        rule.type = bypass_rule::kind::method;
        rule.value = upper;
    }
    r.bypass.push_back(std::move(rule));
}

// Time span an event occupies (its prequeue included) and where to report an overlap.
struct event_span {
    time_point from;
    time_point to;
    std::size_t index;
    YAML::Node node;
    std::string name;
};

void read_event(loader& l, const YAML::Node& n, const std::string& path, event& ev,
                std::vector<event_span>& spans, std::size_t index, YAML::Mark& name_mark) {
    fields f(l, n, path,
             {"name", "description", "prequeue_start_time", "event_start_time", "event_end_time",
              "total_active_users", "new_users_per_minute", "session_duration",
              "disable_session_renewal", "queueing_method", "suspended", "custom_page_html",
              "shuffle_at_event_start"});
    if (!f.ok() || n.IsNull()) {
        if (n.IsNull()) {
            l.report(n, path, "must be a mapping of keys to values");
        }
        return;
    }
    if (auto v = f.get("name")) {
        name_mark = v->Mark();
        if (auto s = l.string(*v, f.at("name"))) {
            if (s->empty()) {
                l.report(*v, f.at("name"), "must not be empty");
            }
            ev.name = *s;
        }
    } else {
        l.report(n, f.at("name"), "is required");
    }
    l.set_string(f, "description", ev.description);
    bool times_ok = true;
    for (auto key : {"event_start_time", "event_end_time"}) {
        if (!f.get(key)) {
            l.report(n, f.at(key), "is required");
            times_ok = false;
        }
    }
    auto read_time = [&](std::string_view key, auto& dst) {
        if (auto v = f.get(key)) {
            if (auto t = l.time(*v, f.at(key))) {
                assign(dst, *t);
            } else {
                times_ok = false;
            }
        }
    };
    read_time("prequeue_start_time", ev.prequeue_start_time);
    read_time("event_start_time", ev.event_start_time);
    read_time("event_end_time", ev.event_end_time);
    if (times_ok) {
        if (ev.event_end_time <= ev.event_start_time) {
            l.report(*f.get("event_end_time"), f.at("event_end_time"),
                     "must be after event_start_time");
        } else if (ev.prequeue_start_time && *ev.prequeue_start_time > ev.event_start_time) {
            l.report(*f.get("prequeue_start_time"), f.at("prequeue_start_time"),
                     "must not be after event_start_time");
        } else {
            spans.push_back({ev.prequeue_start_time.value_or(ev.event_start_time),
                             ev.event_end_time, index, n, ev.name});
        }
    }
    l.set_integer<std::uint32_t>(f, "total_active_users", ev.total_active_users, 1, max_users);
    l.set_integer<std::uint32_t>(f, "new_users_per_minute", ev.new_users_per_minute, 1, max_users);
    l.set_duration(f, "session_duration", ev.session_duration, std::chrono::seconds{1});
    l.set_bool(f, "disable_session_renewal", ev.disable_session_renewal);
    if (auto v = f.get("queueing_method")) {
        if (auto m = read_method(l, *v, f.at("queueing_method"))) {
            ev.queueing_method = *m;
        }
    }
    l.set_bool(f, "suspended", ev.suspended);
    read_template(l, f, ev.custom_page_html);
    l.set_bool(f, "shuffle_at_event_start", ev.shuffle_at_event_start);
}

void read_room(loader& l, const YAML::Node& n, const std::string& path, room& r,
               room_marks& marks) {
    fields f(l, n, path,
             {"name",
              "id",
              "description",
              "host",
              "path",
              "additional_routes",
              "case_insensitive_paths",
              "total_active_users",
              "new_users_per_minute",
              "session_duration",
              "disable_session_renewal",
              "queueing_method",
              "queue_all",
              "suspended",
              "queueing_status_code",
              "json_response_enabled",
              "refresh_interval",
              "custom_page_html",
              "default_template_language",
              "cookie_suffix",
              "cookie_attributes",
              "enabled_origin_commands",
              "bypass",
              "events"});
    marks.id_node.reset(n);
    if (!f.ok() || n.IsNull()) {
        if (n.IsNull()) {
            l.report(n, path, "must be a mapping of keys to values");
        }
        return;
    }
    for (auto key : {"name", "total_active_users", "new_users_per_minute"}) {
        if (!f.get(key)) {
            l.report(n, f.at(key), "is required");
        }
    }
    if (auto v = f.get("name")) {
        marks.id_node.reset(*v);
        if (auto s = l.string(*v, f.at("name"))) {
            if (s->empty()) {
                l.report(*v, f.at("name"), "must not be empty");
            }
            r.name = *s;
        }
    }
    if (auto v = f.get("id")) {
        marks.id_node.reset(*v);
        marks.id_given = true;
        if (auto s = l.string(*v, f.at("id"))) {
            if (s->empty() || s->size() > 64 || !charset_ok(*s, "_-")) {
                l.report(*v, f.at("id"), "must be 1 to 64 characters of A-Z a-z 0-9 _ -");
            } else {
                r.id = *s;
            }
        }
    } else if (!r.name.empty()) {
        r.id = slug(r.name);
        if (r.id.empty()) {
            l.report(*f.get("name"), f.at("id"),
                     "cannot be derived from the name; set id (A-Z a-z 0-9 _ -)");
        } else if (r.id.size() > 64) {
            r.id.resize(64);
        }
    }
    l.set_string(f, "description", r.description);
    std::size_t before = l.problems().size();
    read_route_host(l, f, r.host);
    read_route_path(l, f, r.path);
    marks.routes.push_back(l.problems().size() != before ? std::nullopt
                           : f.get("path")               ? std::optional(f.get("path")->Mark())
                                                         : std::optional(n.Mark()));
    if (auto v = f.get("additional_routes"); v && l.list(*v, f.at("additional_routes"))) {
        const YAML::Node seq = *v;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            std::string rp = f.at("additional_routes") + "[" + std::to_string(i) + "]";
            const YAML::Node rn = seq[i];
            fields rf(l, rn, rp, {"host", "path"});
            if (!rf.ok()) {
                continue;
            }
            route rt;
            std::size_t before_route = l.problems().size();
            read_route_host(l, rf, rt.host);
            read_route_path(l, rf, rt.path);
            marks.routes.push_back(l.problems().size() != before_route ? std::nullopt
                                                                       : std::optional(rn.Mark()));
            r.additional_routes.push_back(std::move(rt));
        }
    }
    l.set_integer<std::uint32_t>(f, "total_active_users", r.total_active_users, 1, max_users);
    l.set_integer<std::uint32_t>(f, "new_users_per_minute", r.new_users_per_minute, 1, max_users);
    l.set_duration(f, "session_duration", r.session_duration, std::chrono::seconds{1});
    l.set_bool(f, "disable_session_renewal", r.disable_session_renewal);
    l.set_bool(f, "case_insensitive_paths", r.case_insensitive_paths);
    if (auto v = f.get("queueing_method")) {
        if (auto m = read_method(l, *v, f.at("queueing_method"))) {
            r.method = *m;
        }
    }
    l.set_bool(f, "queue_all", r.queue_all);
    l.set_bool(f, "suspended", r.suspended);
    if (auto v = f.get("queueing_status_code")) {
        if (auto c = l.choice<std::uint16_t>(*v, f.at("queueing_status_code"),
                                             {{"200", 200}, {"202", 202}, {"429", 429}})) {
            r.queueing_status_code = *c;
        }
    }
    l.set_bool(f, "json_response_enabled", r.json_response_enabled);
    l.set_duration(f, "refresh_interval", r.refresh_interval, std::chrono::seconds{1});
    read_template(l, f, r.custom_page_html);
    if (auto v = f.get("default_template_language")) {
        if (auto s = l.choice<std::string_view>(*v, f.at("default_template_language"),
                                                {{"en-US", "en-US"},
                                                 {"es-ES", "es-ES"},
                                                 {"de-DE", "de-DE"},
                                                 {"fr-FR", "fr-FR"},
                                                 {"it-IT", "it-IT"},
                                                 {"ja-JP", "ja-JP"},
                                                 {"ko-KR", "ko-KR"},
                                                 {"pt-BR", "pt-BR"},
                                                 {"zh-CN", "zh-CN"},
                                                 {"zh-TW", "zh-TW"},
                                                 {"nl-NL", "nl-NL"},
                                                 {"pl-PL", "pl-PL"},
                                                 {"ru-RU", "ru-RU"},
                                                 {"tr-TR", "tr-TR"},
                                                 {"id-ID", "id-ID"},
                                                 {"fa-IR", "fa-IR"}})) {
            r.default_template_language = std::string(*s);
        }
    }
    if (auto v = f.get("cookie_suffix")) {
        if (auto s = l.string(*v, f.at("cookie_suffix"))) {
            if (s->size() > 64 || !charset_ok(*s, "_-")) {
                l.report(*v, f.at("cookie_suffix"),
                         "must be up to 64 characters of A-Z a-z 0-9 _ -");
            } else {
                r.cookie_suffix = *s;
            }
        }
    }
    if (auto v = f.get("cookie_attributes")) {
        fields cf(l, *v, f.at("cookie_attributes"), {"samesite", "secure"});
        if (cf.ok()) {
            if (auto s = cf.get("samesite")) {
                if (auto m = l.choice<same_site>(*s, cf.at("samesite"),
                                                 {{"auto", same_site::auto_},
                                                  {"lax", same_site::lax},
                                                  {"strict", same_site::strict},
                                                  {"none", same_site::none}})) {
                    r.cookie_attrs.samesite = *m;
                }
            }
            if (auto s = cf.get("secure")) {
                if (auto m = l.choice<secure_mode>(*s, cf.at("secure"),
                                                   {{"auto", secure_mode::auto_},
                                                    {"always", secure_mode::always},
                                                    {"never", secure_mode::never}})) {
                    r.cookie_attrs.secure = *m;
                }
            }
            // Browsers drop a SameSite=None cookie that is not Secure.
            if (r.cookie_attrs.samesite == same_site::none &&
                r.cookie_attrs.secure == secure_mode::never) {
                l.report(*cf.get("secure"), cf.at("secure"),
                         "must be auto or always when samesite is none (browsers drop the "
                         "cookie otherwise)");
            }
        }
    }
    if (auto v = f.get("enabled_origin_commands");
        v && l.list(*v, f.at("enabled_origin_commands"))) {
        const YAML::Node seq = *v;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            std::string cp = f.at("enabled_origin_commands") + "[" + std::to_string(i) + "]";
            if (l.choice<bool>(seq[i], cp, {{"revoke", true}})) {
                r.revoke_enabled = true;
            }
        }
    }
    if (auto v = f.get("bypass"); v && l.list(*v, f.at("bypass"))) {
        const YAML::Node seq = *v;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            read_bypass(l, seq[i], f.at("bypass") + "[" + std::to_string(i) + "]", r);
        }
    }
    if (auto v = f.get("events"); v && l.list(*v, f.at("events"))) {
        std::vector<event_span> spans;
        std::map<std::string, std::size_t> names;
        const YAML::Node seq = *v;
        for (std::size_t i = 0; i < seq.size(); ++i) {
            std::string ep = f.at("events") + "[" + std::to_string(i) + "]";
            event ev;
            YAML::Mark name_mark = YAML::Mark::null_mark();
            read_event(l, seq[i], ep, ev, spans, i, name_mark);
            if (!ev.name.empty()) {
                if (auto [pos, fresh] = names.emplace(ev.name, i); !fresh) {
                    l.report(name_mark, ep + ".name",
                             "duplicate event name \"" + ev.name + "\" (also " + f.at("events") +
                                 "[" + std::to_string(pos->second) + "])");
                }
            }
            r.events.push_back(std::move(ev));
        }
        std::sort(spans.begin(), spans.end(),
                  [](const event_span& a, const event_span& b) { return a.from < b.from; });
        for (std::size_t i = 1; i < spans.size(); ++i) {
            const auto& prev = spans[i - 1];
            const auto& cur = spans[i];
            if (cur.from < prev.to) {
                l.report(
                    cur.node, f.at("events") + "[" + std::to_string(cur.index) + "]",
                    "overlaps " + f.at("events") + "[" + std::to_string(prev.index) + "] \"" +
                        prev.name + "\", which runs until " +
                        util::iso8601_utc(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              prev.to.time_since_epoch())
                                              .count()) +
                        " (events of a room must not overlap, prequeue included)");
            }
        }
    }
}

void read_rooms(loader& l, const YAML::Node& n, std::vector<room>& rooms) {
    if (!l.list(n, "rooms")) {
        return;
    }
    std::vector<room_marks> marks(n.size());
    for (std::size_t i = 0; i < n.size(); ++i) {
        room r;
        read_room(l, n[i], "rooms[" + std::to_string(i) + "]", r, marks[i]);
        rooms.push_back(std::move(r));
    }
    // Ids name rooms in cookies, the admin API and the state store; routes pick the room.
    std::map<std::string, std::size_t> ids;
    std::map<std::pair<std::string, std::string>, std::size_t> routes;
    for (std::size_t i = 0; i < rooms.size(); ++i) {
        const room& r = rooms[i];
        std::string rp = "rooms[" + std::to_string(i) + "]";
        if (!r.id.empty()) {
            if (auto [pos, fresh] = ids.emplace(r.id, i); !fresh) {
                l.report(marks[i].id_node, rp + ".id",
                         "duplicate room id \"" + r.id + "\" (also rooms[" +
                             std::to_string(pos->second) + "])" +
                             (marks[i].id_given ? "" : "; set a distinct id"));
            }
        }
        if (r.name.empty() && !n[i].IsMap()) {
            continue;
        }
        std::vector<std::pair<route, std::string>> all{{route{r.host, r.path}, rp + ".path"}};
        for (std::size_t j = 0; j < r.additional_routes.size(); ++j) {
            all.push_back(
                {r.additional_routes[j], rp + ".additional_routes[" + std::to_string(j) + "]"});
        }
        for (std::size_t j = 0; j < all.size() && j < marks[i].routes.size(); ++j) {
            if (!marks[i].routes[j]) {
                continue;
            }
            const auto& [rt, where] = all[j];
            const YAML::Mark& mark = *marks[i].routes[j];
            auto [pos, fresh] = routes.emplace(std::pair{rt.host, rt.path}, i);
            if (!fresh && pos->second != i) {
                l.report(mark, where,
                         "route " + (rt.host.empty() ? std::string("*") : rt.host) + rt.path +
                             " is already used by rooms[" + std::to_string(pos->second) + "]");
            } else if (!fresh) {
                l.report(mark, where,
                         "route " + (rt.host.empty() ? std::string("*") : rt.host) + rt.path +
                             " is listed twice in this room");
            }
        }
    }
}

void read_root(loader& l, const YAML::Node& root, config& cfg) {
    fields f(l, root, "",
             {"listen", "trusted_proxies", "forwarded_headers", "origin", "threads", "node",
              "cookie", "state", "admin", "logging", "limits", "testing", "rooms"});
    if (!f.ok()) {
        return;
    }
    if (auto v = f.get("listen")) {
        cfg.listen.clear();
        if (v->IsScalar()) {
            cfg.listen.emplace_back();
            read_listener(l, *v, "listen", cfg.listen.back());
        } else if (l.list(*v, "listen")) {
            const YAML::Node seq = *v;
            for (std::size_t i = 0; i < seq.size(); ++i) {
                cfg.listen.emplace_back();
                read_listener(l, seq[i], "listen[" + std::to_string(i) + "]", cfg.listen.back());
            }
            if (v->size() == 0) {
                l.report(*v, "listen", "must list at least one address, like 0.0.0.0:8080");
            }
        }
    }
    if (auto v = f.get("trusted_proxies")) {
        read_trusted_proxies(l, *v, cfg.trusted_proxies);
    }
    if (auto v = f.get("forwarded_headers")) {
        if (auto m = l.choice<forwarded_mode>(
                *v, "forwarded_headers",
                {{"overwrite", forwarded_mode::overwrite}, {"append", forwarded_mode::append}})) {
            cfg.forwarded_headers = *m;
        }
    }
    if (auto v = f.get("origin")) {
        read_origin(l, *v, cfg.origin);
    }
    if (auto v = f.get("threads")) {
        if (v->IsScalar() && v->Scalar() == "auto") {
            cfg.threads = 0;
        } else if (auto t = l.integer(*v, "threads", 1, 1024,
                                      "must be \"auto\" or a positive number of threads")) {
            cfg.threads = static_cast<unsigned>(*t);
        }
    }
    if (auto v = f.get("node")) {
        read_node(l, *v, cfg.node);
    }
    if (auto v = f.get("cookie")) {
        read_cookie(l, *v, cfg.cookie);
    }
    YAML::Mark backend_mark = YAML::Mark::null_mark();
    if (auto v = f.get("state")) {
        read_state(l, *v, cfg.state, backend_mark);
    }
    if (auto v = f.get("admin")) {
        read_admin(l, *v, cfg.admin);
    }
    if (auto v = f.get("logging")) {
        read_logging(l, *v, cfg.logging);
    }
    if (auto v = f.get("limits")) {
        read_limits(l, *v, cfg.limits);
    }
    if (auto v = f.get("testing")) {
        read_testing(l, *v, cfg.testing);
    }
    if (auto v = f.get("rooms")) {
        read_rooms(l, *v, cfg.rooms);
    }
    // Every node must read the others' cookies, so a generated per-node key cannot work.
    if (cfg.state.backend == state_backend::redis && cfg.cookie.keys.empty()) {
        l.report(backend_mark, "state.backend",
                 "redis needs cookie.keys: every node must share the same cookie keys");
    }
}

load_result load(std::string_view yaml, const std::string& name, const fs::path& base_dir,
                 const std::string& source_path) {
    std::error_code ec;
    fs::path base = fs::absolute(base_dir.empty() ? fs::path(".") : base_dir, ec);
    loader l(name, base.lexically_normal());
    auto cfg = std::make_shared<config>();
    cfg->source_path = source_path;
    cfg->base_dir = base.lexically_normal().string();
    while (cfg->base_dir.size() > 1 && cfg->base_dir.back() == '/') {
        cfg->base_dir.pop_back();
    }
    try {
        YAML::Node root = YAML::Load(std::string(yaml));
        read_root(l, root, *cfg);
    } catch (const YAML::ParserException& e) {
        l.report(e.mark, "", "YAML syntax error: " + e.msg);
    } catch (const YAML::Exception& e) {
        l.report(e.mark, "", "YAML error: " + e.msg);
    }
    if (cfg->cookie.key_file.empty()) {
        cfg->cookie.key_file = l.resolve("waitroom.key");
    }
    if (cfg->node.id.empty()) {
        cfg->node.id = host_name();
    }
    load_result result;
    result.problems = std::move(l.problems());
    std::stable_sort(result.problems.begin(), result.problems.end(),
                     [](const problem& a, const problem& b) {
                         return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                     });
    if (result.problems.empty()) {
        result.cfg = std::move(cfg);
    }
    return result;
}

}  // namespace

load_result load_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        int err = errno;
        load_result r;
        r.problems.push_back(
            problem{path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(err)});
        return r;
    }
    std::ostringstream text;
    text << in.rdbuf();
    fs::path dir = fs::path(path).parent_path();
    std::error_code ec;
    return load(text.str(), path, dir.empty() ? fs::path(".") : dir,
                fs::absolute(path, ec).lexically_normal().string());
}

load_result load_string(std::string_view yaml, const std::string& name,
                        const std::string& base_dir) {
    return load(yaml, name, base_dir, "");
}

}  // namespace waitroom::config
