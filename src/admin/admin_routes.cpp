#include "admin_routes.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string_view>

#include "admin_dashboard.hpp"

namespace waitroom::admin {

namespace http = boost::beast::http;
using json = nlohmann::json;

std::string_view to_string(room_queue_status s) {
    switch (s) {
        case room_queue_status::not_queueing:
            return "not_queueing";
        case room_queue_status::queueing:
            return "queueing";
        case room_queue_status::event_prequeueing:
            return "event_prequeueing";
        case room_queue_status::suspended:
            return "suspended";
    }
    return "not_queueing";
}

json to_json(const admin_room_status& s) {
    return json{
        {"id", s.id},
        {"status", std::string(to_string(s.status))},
        // Cloudflare sends the event id as a string; "" when no event is current.
        {"event_id", s.event_id == 0 ? std::string() : std::to_string(s.event_id)},
        {"estimated_queued_users", s.estimated_queued_users},
        {"estimated_total_active_users", s.estimated_total_active_users},
        {"max_estimated_time_minutes", s.max_estimated_time_minutes},
        {"limits",
         {{"total_active_users", s.total_active_users},
          {"new_users_per_minute", s.new_users_per_minute}}},
        {"admitted_this_minute", s.admitted_this_minute},
        {"nodes", s.nodes},
        {"degraded", s.degraded},
        {"queue_all", s.queue_all},
        {"suspended", s.suspended},
    };
}

json to_json(const admin_origins& o) {
    json servers = json::array();
    for (const auto& s : o.servers) {
        servers.push_back(json{
            {"url", s.url},
            {"weight", s.weight},
            {"healthy", s.healthy},
            {"ejected", s.ejected},
            {"checks_pass", s.checks_pass},
            {"ejected_for_ms", s.ejected_for_ms},
            {"ejections", s.ejections},
            {"requests", s.requests},
            {"errors", s.errors},
            {"response_p50_seconds", s.response_p50_seconds},
            {"response_p90_seconds", s.response_p90_seconds},
        });
    }
    return json{{"available", o.available}, {"servers", std::move(servers)}};
}

namespace {

constexpr std::string_view rooms_prefix = "/rooms/";
constexpr std::string_view status_suffix = "/status";
constexpr std::string_view preview_suffix = "/preview";
constexpr std::string_view analytics_suffix = "/analytics";
constexpr std::string_view analytics_csv_suffix = "/analytics.csv";

admin_reply json_reply(unsigned status, const json& body) {
    admin_reply r;
    r.status = status;
    // error_handler::replace: a room id from a config file is the only text, but never throw.
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    return r;
}

admin_reply method_not_allowed(std::string_view allow) {
    auto r = admin_routes::error(405, "method not allowed");
    r.headers.emplace_back("Allow", std::string(allow));
    return r;
}

// The room id of /rooms/{id}, /rooms/{id}/status or /rooms/{id}/preview; "" when the path is
// none of them.
struct room_path {
    enum class kind { room, status, preview, analytics, analytics_csv };
    std::string_view id;
    kind what = kind::room;
};

room_path parse_room_path(std::string_view path) {
    if (!path.starts_with(rooms_prefix)) {
        return {};
    }
    auto rest = path.substr(rooms_prefix.size());
    room_path out;
    if (rest.ends_with(status_suffix)) {
        rest.remove_suffix(status_suffix.size());
        out.what = room_path::kind::status;
    } else if (rest.ends_with(preview_suffix)) {
        rest.remove_suffix(preview_suffix.size());
        out.what = room_path::kind::preview;
    } else if (rest.ends_with(analytics_suffix)) {
        rest.remove_suffix(analytics_suffix.size());
        out.what = room_path::kind::analytics;
    } else if (rest.ends_with(analytics_csv_suffix)) {
        rest.remove_suffix(analytics_csv_suffix.size());
        out.what = room_path::kind::analytics_csv;
    }
    if (rest.empty() || rest.find('/') != std::string_view::npos) {
        return {};
    }
    out.id = rest;
    return out;
}

// Validates a PATCH body: an object with `queue_all` and/or `suspended`, both booleans, and
// nothing else (a typo must not silently do nothing).
std::optional<admin_reply> parse_patch(std::string_view body, admin_room_patch& out) {
    json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
        return admin_routes::error(400, "request body is not valid JSON");
    }
    if (!doc.is_object()) {
        return admin_routes::error(400, "request body must be a JSON object");
    }
    for (const auto& [key, value] : doc.items()) {
        if (key != "queue_all" && key != "suspended") {
            return admin_routes::error(400, "unknown field; expected queue_all or suspended", key);
        }
        if (!value.is_boolean()) {
            return admin_routes::error(400, key + " must be true or false", key);
        }
        (key == "queue_all" ? out.queue_all : out.suspended) = value.get<bool>();
    }
    if (!out.queue_all && !out.suspended) {
        return admin_routes::error(400, "set queue_all or suspended");
    }
    return std::nullopt;
}

struct preview_query {
    admin_preview_state state = admin_preview_state::queued;
    std::string language;  // "" = the room's own
};

// A language tag as BCP 47 writes one ("de-DE", "ja"): letters, then subtags of letters and
// digits. Checked here so that nothing else reaches the backend or a reply.
bool is_language_tag(std::string_view s) {
    const auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    const auto first = s.find('-');
    const auto primary = s.substr(0, first);
    if (s.size() > 35 || primary.size() < 2 || primary.size() > 3 ||
        !std::all_of(primary.begin(), primary.end(),
                     [&](char c) { return alnum(c) && !(c >= '0' && c <= '9'); })) {
        return false;
    }
    std::size_t run = 0;
    for (std::size_t i = primary.size(); i < s.size(); ++i) {
        if (s[i] == '-') {
            if (i + 1 == s.size() || (i > primary.size() && run == 0)) {
                return false;
            }
            run = 0;
        } else if (!alnum(s[i]) || ++run > 8) {
            return false;
        }
    }
    return true;
}

// ---- analytics queries ----------------------------------------------------------------------

constexpr std::size_t max_query = 1024;
constexpr std::int64_t minute_ms = 60'000;
constexpr std::int64_t kept_minutes =
    static_cast<std::int64_t>(metrics::room_history::default_rows);
// The longest span a CSV may ask for. The rows kept cover the last day; a longer span (an event
// of several days) is answered with what is kept, but a span past this is a mistake.
constexpr std::int64_t max_csv_span_ms = 31ll * 24 * 3'600'000;

// One name=value pair of a query, the value percent-decoded (a browser writes ':' as %3A).
struct query_pair {
    std::string_view name;
    std::string value;
};

// Splits a query into pairs; nullopt (and `error` set) on a bad escape or an overlong query.
std::optional<std::vector<query_pair>> split_query(std::string_view query, admin_reply& error) {
    if (query.size() > max_query) {
        error = admin_routes::error(400, "query longer than 1024 bytes");
        return std::nullopt;
    }
    const auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    };
    std::vector<query_pair> out;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (pair.empty()) {
            continue;
        }
        const auto eq = pair.find('=');
        query_pair p;
        p.name = pair.substr(0, eq);
        const auto raw = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
        for (std::size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '+') {
                p.value += ' ';
            } else if (raw[i] != '%') {
                p.value += raw[i];
            } else if (i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
                p.value += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
                i += 2;
            } else {
                error = admin_routes::error(400, "bad percent escape in the query",
                                            std::string(p.name));
                return std::nullopt;
            }
        }
        for (const auto& seen : out) {
            if (seen.name == p.name) {
                error = admin_routes::error(400, std::string(p.name) + " given more than once",
                                            std::string(p.name));
                return std::nullopt;
            }
        }
        out.push_back(std::move(p));
    }
    return out;
}

// Validates the query of a preview: `state` (queued, event or reject) and `lang`, each at most
// once, and nothing else.
std::optional<admin_reply> parse_preview_query(std::string_view query, preview_query& out) {
    admin_reply error;
    auto pairs = split_query(query, error);
    if (!pairs) {
        return error;
    }
    for (auto& [name, value] : *pairs) {
        if (name == "state") {
            if (value == "queued") {
                out.state = admin_preview_state::queued;
            } else if (value == "event") {
                out.state = admin_preview_state::event;
            } else if (value == "reject") {
                out.state = admin_preview_state::reject;
            } else {
                return admin_routes::error(400, "state must be queued, event or reject", "state");
            }
        } else if (name == "lang") {
            if (!is_language_tag(value)) {
                return admin_routes::error(400, "lang must be a language tag like de-DE", "lang");
            }
            out.language = std::move(value);
        } else {
            return admin_routes::error(400, "unknown query parameter; expected state or lang");
        }
    }
    return std::nullopt;
}

bool all_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The start of the minute after the one `t_ms` falls in: the end of the rows of "now".
std::int64_t next_minute(std::int64_t t_ms) {
    return t_ms - t_ms % minute_ms + minute_ms;
}

// A time of the CSV query: unix seconds ("1795000000") or ISO 8601 UTC to the minute or second
// ("2026-11-26T07:00Z", "2026-11-26T07:00:30Z"). Nothing before 1970 or after 9999.
std::optional<std::int64_t> parse_time_ms(std::string_view s) {
    if (all_digits(s)) {
        if (s.size() > 11) {
            return std::nullopt;
        }
        std::int64_t v = 0;
        for (char c : s) {
            v = v * 10 + (c - '0');
        }
        return v * 1000;
    }
    // YYYY-MM-DDTHH:MM[:SS]Z
    if ((s.size() != 17 && s.size() != 20) || s[4] != '-' || s[7] != '-' ||
        (s[10] != 'T' && s[10] != 't') || s[13] != ':' || (s.back() != 'Z' && s.back() != 'z') ||
        (s.size() == 20 && s[16] != ':')) {
        return std::nullopt;
    }
    const auto num = [&](std::size_t at, std::size_t n) -> int {
        auto part = s.substr(at, n);
        if (!all_digits(part)) {
            return -1;
        }
        int v = 0;
        for (char c : part) {
            v = v * 10 + (c - '0');
        }
        return v;
    };
    const int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2);
    const int sec = s.size() == 20 ? num(17, 2) : 0;
    if (y < 1970 || mo < 1 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
        sec > 59) {
        return std::nullopt;
    }
    using namespace std::chrono;
    const year_month_day ymd{year{y}, month{static_cast<unsigned>(mo)},
                             day{static_cast<unsigned>(d)}};
    if (!ymd.ok()) {
        return std::nullopt;
    }
    const auto t = sys_days{ymd} + hours{h} + minutes{mi} + seconds{sec};
    return duration_cast<milliseconds>(t.time_since_epoch()).count();
}

// Seconds to a tenth, shares to a thousandth; null where there is nothing to show.
json number_or_null(double v, double scale = 10) {
    return std::isfinite(v) ? json(std::round(v * scale) / scale) : json(nullptr);
}

json row_json(const metrics::minute_row& r) {
    const auto s = metrics::summarize(r);
    return json{
        {"minute", r.minute_ms},
        {"admitted", r.admitted},
        {"admitted_from_queue", r.admitted_from_queue},
        {"admitted_out_of_order", r.admitted_out_of_order},
        {"queued", r.queued},
        {"abandoned", r.abandoned},
        {"revoked", r.revoked},
        {"flagged", r.flagged},
        {"queue_wait_p50_seconds", number_or_null(s.queue_wait_p50)},
        {"queue_wait_p90_seconds", number_or_null(s.queue_wait_p90)},
        {"estimates_compared", s.estimates_compared},
        {"estimate_error_median_seconds", number_or_null(s.estimate_error_median)},
        {"estimate_error_bias_seconds", number_or_null(s.estimate_error_bias)},
        {"session_p50_seconds", number_or_null(s.session_p50)},
        {"out_of_order_share", number_or_null(s.out_of_order_share, 1000)},
        {"active_users", r.active_users},
        {"queued_users", r.queued_users},
    };
}

// A file name for the download: the room id with anything but [A-Za-z0-9_-] as '_'.
std::string file_name_of(std::string_view room) {
    std::string out;
    for (char c : room.substr(0, 64)) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_';
        out += plain ? c : '_';
    }
    return (out.empty() ? std::string("room") : out) + "-analytics.csv";
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) {
        out += (out.empty() ? "" : ", ") + item;
    }
    return out;
}

}  // namespace

admin_reply admin_routes::error(unsigned status, std::string_view message, std::string_view field) {
    json body{{"error", std::string(message)}};
    if (!field.empty()) {
        body["field"] = std::string(field);
    }
    return json_reply(status, body);
}

void admin_routes::handle(const admin_request& req, const admin_access& access,
                          std::function<void(admin_reply)> done) const {
    std::string_view target = req.target();
    std::string_view path = target.substr(0, target.find('?'));
    const http::verb method = req.method();

    // Without a token, loopback is the only protection, and a browser on this machine can be
    // led to it under a hostile name (DNS rebinding): answer only the names loopback has. Every
    // path, /healthz included, so that such a page learns nothing at all. With a token the
    // browser cannot authenticate, so Host is not judged.
    if (!access.token) {
        auto host = req.find(http::field::host);
        std::string_view value;
        if (host != req.end()) {
            value = std::string_view(host->value().data(), host->value().size());
        }
        if (host == req.end() || !admin_host_allowed(value, access.allowed_hosts)) {
            return done(error(421,
                              "without an admin token this API answers only Host 127.0.0.1, "
                              "[::1], localhost or a name in admin.allowed_hosts"));
        }
    }

    // /healthz answers whatever the token: orchestrators probe it without credentials. So does
    // the dashboard page: it is static, holds no data, and asks the user for the token itself.
    if (path == "/healthz") {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        return done(json_reply(200, json{{"status", "ok"}}));
    }
    if (path == "/" || path == "/index.html") {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        admin_reply r;
        r.content_type = "text/html; charset=utf-8";
        r.body = std::string(admin_dashboard_html);
        r.headers.emplace_back("Content-Security-Policy",
                               "default-src 'none'; script-src 'unsafe-inline'; "
                               "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
        r.headers.emplace_back("X-Frame-Options", "DENY");
        return done(std::move(r));
    }

    // Authentication before routing, so an unauthenticated caller learns nothing of the paths.
    auto auth_it = req.find(http::field::authorization);
    bool has_auth = auth_it != req.end();
    std::string_view auth_value;
    if (has_auth) {
        auth_value = std::string_view(auth_it->value().data(), auth_it->value().size());
    }
    switch (check_bearer(access.token ? &*access.token : nullptr, auth_value, has_auth)) {
        case admin_auth::ok:
            break;
        case admin_auth::missing: {
            auto r = error(401, "missing bearer token");
            r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"waitroom-admin\"");
            return done(std::move(r));
        }
        case admin_auth::malformed: {
            auto r = error(401, "malformed Authorization header; expected Bearer <token>");
            r.headers.emplace_back("WWW-Authenticate",
                                   "Bearer realm=\"waitroom-admin\", error=\"invalid_request\"");
            return done(std::move(r));
        }
        case admin_auth::wrong:
            return done(error(403, "wrong bearer token"));
    }

    if (path == "/readyz") {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        auto ready = backend_->readiness();
        if (ready.ready) {
            return done(json_reply(200, json{{"status", "ready"}}));
        }
        return done(json_reply(503, json{{"status", "not_ready"}, {"reason", ready.reason}}));
    }
    if (path == "/metrics") {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        admin_reply r;
        r.content_type = "text/plain; version=0.0.4; charset=utf-8";
        r.body = backend_->metrics_text();
        return done(std::move(r));
    }
    if (path == "/origins") {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        return done(json_reply(200, to_json(backend_->origins())));
    }
    if (path == "/rooms") {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        json list = json::array();
        for (const auto& s : backend_->rooms()) {
            list.push_back(to_json(s));
        }
        return done(json_reply(200, json{{"rooms", std::move(list)}}));
    }
    auto room = parse_room_path(path);
    if (room.id.empty()) {
        return done(error(404, "no such path"));
    }
    if (room.what == room_path::kind::preview) {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        return done(preview(room.id, target));
    }
    if (room.what == room_path::kind::analytics || room.what == room_path::kind::analytics_csv) {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        // The path is judged first: an unknown room is a 404 whatever the query.
        if (!backend_->room_status(room.id)) {
            return done(error(404, "no such room"));
        }
        const auto mark = target.find('?');
        const auto query =
            mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1);
        return done(room.what == room_path::kind::analytics ? analytics(room.id, query)
                                                            : analytics_csv(room.id, query));
    }
    if (room.what == room_path::kind::status) {
        if (method != http::verb::get) {
            return done(method_not_allowed("GET"));
        }
        auto s = backend_->room_status(room.id);
        if (!s) {
            return done(error(404, "no such room"));
        }
        return done(json_reply(200, to_json(*s)));
    }
    if (method != http::verb::patch) {
        return done(method_not_allowed("PATCH"));
    }
    // An unknown room is a 404 even with a bad body: the path is judged first.
    if (!backend_->room_status(room.id)) {
        return done(error(404, "no such room"));
    }
    admin_room_patch patch;
    if (auto bad = parse_patch(req.body(), patch)) {
        return done(std::move(*bad));
    }
    backend_->patch_room(room.id, patch, [done = std::move(done)](admin_patch_outcome o) {
        switch (o.result) {
            case admin_patch_result::applied:
                if (o.status) {
                    return done(json_reply(200, to_json(*o.status)));
                }
                return done(json_reply(200, json{{"status", "applied"}}));
            case admin_patch_result::unknown_room:
                return done(error(404, "no such room"));
            case admin_patch_result::failed:
                return done(
                    error(503, o.message.empty() ? "could not apply the change" : o.message));
        }
        done(error(500, "unexpected patch result"));
    });
}

admin_reply admin_routes::analytics(std::string_view id, std::string_view query) const {
    admin_reply bad;
    auto pairs = split_query(query, bad);
    if (!pairs) {
        return bad;
    }
    std::int64_t minutes = 60;
    for (const auto& p : *pairs) {
        if (p.name != "minutes") {
            return error(400, "unknown query parameter; expected minutes");
        }
        const std::int64_t v = all_digits(p.value) && p.value.size() <= 4 ? std::stoll(p.value) : 0;
        if (v < 1 || v > kept_minutes) {
            return error(400, "minutes must be a whole number from 1 to 1440", "minutes");
        }
        minutes = v;
    }
    const std::int64_t now = backend_->now_ms();
    const std::int64_t to = next_minute(now);  // the minute under way included
    auto a = backend_->analytics(id, to - minutes * minute_ms, to);
    if (!a.found) {
        return error(404, "no such room");
    }
    json rows = json::array();
    for (const auto& r : a.rows) {
        rows.push_back(row_json(r));
    }
    json summary = row_json(metrics::combine(a.rows));
    summary.erase("minute");
    return json_reply(200, json{{"room", std::string(id)},
                                {"now", now},
                                {"minutes", minutes},
                                {"summary", std::move(summary)},
                                {"rows", std::move(rows)}});
}

admin_reply admin_routes::analytics_csv(std::string_view id, std::string_view query) const {
    admin_reply bad;
    auto pairs = split_query(query, bad);
    if (!pairs) {
        return bad;
    }
    const std::int64_t now = backend_->now_ms();
    std::int64_t to = next_minute(now);
    std::int64_t from = to - kept_minutes * minute_ms;
    bool has_from = false;
    bool has_to = false;
    const query_pair* event = nullptr;
    for (const auto& p : *pairs) {
        if (p.name == "from" || p.name == "to") {
            auto t = parse_time_ms(p.value);
            if (!t) {
                return error(400,
                             std::string(p.name) +
                                 " must be unix seconds or an ISO 8601 UTC time like "
                                 "2026-11-26T07:00:00Z, from 1970 to 9999",
                             std::string(p.name));
            }
            (p.name == "from" ? from : to) = *t;
            (p.name == "from" ? has_from : has_to) = true;
        } else if (p.name == "event") {
            if (p.value.empty() || p.value.size() > 200) {
                return error(400, "event must name one of the room's events", "event");
            }
            event = &p;
        } else {
            return error(400, "unknown query parameter; expected from and to, or event");
        }
    }
    if (event != nullptr) {
        if (has_from || has_to) {
            return error(400, "give either event or from and to, not both", "event");
        }
        auto span = backend_->event_span(id, event->value);
        if (!span) {
            return error(400, "event must name one of the room's events", "event");
        }
        from = span->from_ms;
        to = span->to_ms;
    }
    if (from >= to) {
        return error(400, "from must be before to", has_from ? "from" : "to");
    }
    if (to - from > max_csv_span_ms) {
        return error(400, "the range is longer than 31 days; the rows of the last day are kept");
    }
    auto a = backend_->analytics(id, from - from % minute_ms, to);
    if (!a.found) {
        return error(404, "no such room");
    }
    admin_reply r;
    r.content_type = "text/csv; charset=utf-8";
    r.body = metrics::to_csv(id, a.rows);
    r.headers.emplace_back("Content-Disposition",
                           "attachment; filename=\"" + file_name_of(id) + "\"");
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
}

admin_reply admin_routes::preview(std::string_view id, std::string_view target) const {
    // The path is judged first: an unknown room is a 404 whatever the query.
    if (!backend_->room_status(id)) {
        return error(404, "no such room");
    }
    const auto mark = target.find('?');
    preview_query q;
    if (auto bad = parse_preview_query(
            mark == std::string_view::npos ? std::string_view() : target.substr(mark + 1), q)) {
        return std::move(*bad);
    }
    auto page = backend_->preview_page(id, q.state, q.language);
    switch (page.result) {
        case admin_preview_result::rendered:
            break;
        case admin_preview_result::unknown_room:
            return error(404, "no such room");
        case admin_preview_result::unknown_language:
            return error(400, "lang must be one of " + joined(page.languages), "lang");
    }
    admin_reply r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::move(page.html);
    // The page is the operator's template with its scripts: it runs in a sandbox of its own
    // origin, so it can read nothing of the admin API's (the dashboard's token included), and
    // it may not call out (its queue script would poll this address).
    r.headers.emplace_back("Content-Security-Policy",
                           "sandbox allow-scripts; connect-src 'none'; form-action 'none'; "
                           "frame-ancestors 'self'");
    return r;
}

}  // namespace waitroom::admin
