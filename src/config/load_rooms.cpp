// The room schema: a room's keys and routes, its bypass rules and its events, and the checks
// across rooms (ids, routes) and across the events of a room (names, overlaps).

#include "load_rooms.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "waitroom/config/values.hpp"
#include "waitroom/util/clock.hpp"
#include "waitroom/util/request_target.hpp"

namespace waitroom::config::detail {

namespace {

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

// The most a challenge may ask: 2^24 hashes take minutes in a browser's Web Crypto.
constexpr unsigned max_challenge_bits = 24;

void read_challenge(loader& l, const YAML::Node& n, const std::string& path,
                    challenge_settings& c) {
    fields cf(l, n, path, {"enabled", "min_difficulty", "max_difficulty"});
    if (!cf.ok()) {
        return;
    }
    l.set_bool(cf, "enabled", c.enabled);
    l.set_integer<unsigned>(cf, "min_difficulty", c.min_difficulty, 1, max_challenge_bits);
    l.set_integer<unsigned>(cf, "max_difficulty", c.max_difficulty, 1, max_challenge_bits);
    if (c.min_difficulty > c.max_difficulty) {
        const YAML::Node at = cf.get("max_difficulty") ? *cf.get("max_difficulty")
                                                         : *cf.get("min_difficulty");
        l.report(at, cf.at(cf.get("max_difficulty") ? "max_difficulty" : "min_difficulty"),
                 "min_difficulty (" + std::to_string(c.min_difficulty) +
                     ") must not exceed max_difficulty (" + std::to_string(c.max_difficulty) + ")");
    }
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
              "admission_sound_enabled",
              "refresh_interval",
              "custom_page_html",
              "default_template_language",
              "cookie_suffix",
              "cookie_attributes",
              "enabled_origin_commands",
              "abuse_action",
              "challenge",
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
    l.set_bool(f, "admission_sound_enabled", r.admission_sound_enabled);
    if (auto v = f.get("abuse_action")) {
        if (auto a = l.choice<abuse_action>(*v, f.at("abuse_action"),
                                            {{"off", abuse_action::off},
                                             {"log", abuse_action::log},
                                             {"slow", abuse_action::slow},
                                             {"infinite_queue", abuse_action::infinite_queue}})) {
            r.abuse = *a;
        }
    }
    if (auto v = f.get("challenge")) {
        read_challenge(l, *v, f.at("challenge"), r.challenge);
    }
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

}  // namespace

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

}  // namespace waitroom::config::detail
