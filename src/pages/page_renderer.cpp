#include "waitroom/pages/page_renderer.hpp"

#include <kainjow/mustache.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <unordered_map>

#include "builtin_templates.hpp"

namespace waitroom::pages {

namespace mustache = kainjow::mustache;

namespace {

constexpr std::array<std::string_view, 4> builtin_languages = {"en-US", "de-DE", "fr-FR", "ja-JP"};

// The cache compares whole models so it can never serve another visitor's values. If a field is
// added to page_model this fails to compile: add it to same_values(), to_data(), render_json().
static_assert(sizeof(room::page_model) == 304, "page_model changed: update page_renderer.cpp");

// queueing_method is left out: it is a view, and the cache keeps its own copy (see slot).
bool same_values(const room::page_model& a, const room::page_model& b) {
    return a.in_waiting_room == b.in_waiting_room && a.queue_position == b.queue_position &&
           a.wait_time_known == b.wait_time_known && a.wait_time == b.wait_time &&
           a.wait_time_hours == b.wait_time_hours &&
           a.wait_time_hour_minutes == b.wait_time_hour_minutes &&
           a.wait_time_25_percentile == b.wait_time_25_percentile &&
           a.wait_time_50_percentile == b.wait_time_50_percentile &&
           a.wait_time_75_percentile == b.wait_time_75_percentile &&
           a.queue_is_full == b.queue_is_full && a.queue_all == b.queue_all &&
           a.last_updated_ms == b.last_updated_ms &&
           a.refresh_interval_seconds == b.refresh_interval_seconds &&
           a.is_fifo_queue == b.is_fifo_queue && a.is_random_queue == b.is_random_queue &&
           a.is_passthrough_queue == b.is_passthrough_queue &&
           a.is_reject_queue == b.is_reject_queue && a.is_event_active == b.is_event_active &&
           a.is_event_prequeueing == b.is_event_prequeueing &&
           a.time_until_event_start == b.time_until_event_start &&
           a.time_until_event_end == b.time_until_event_end &&
           a.shuffle_at_event_start == b.shuffle_at_event_start && a.room_name == b.room_name &&
           a.last_updated == b.last_updated && a.wait_time_formatted == b.wait_time_formatted &&
           a.time_until_event_start_formatted == b.time_until_event_start_formatted &&
           a.time_until_event_end_formatted == b.time_until_event_end_formatted;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

std::string_view builtin_text(std::string_view name) {
    for (std::size_t i = 0; i < builtin::template_count; ++i) {
        if (builtin::templates[i].name == name) {
            return builtin::templates[i].text;
        }
    }
    return {};
}

// kainjow reports errors as "... at <byte offset>"; operators want line:column.
void locate(std::string_view text, const std::string& message, int& line, int& column) {
    line = 0;
    column = 0;
    const auto at = message.rfind(" at ");
    if (at == std::string::npos) {
        return;
    }
    std::size_t offset = 0;
    try {
        offset = std::stoul(message.substr(at + 4));
    } catch (const std::exception&) {
        return;
    }
    offset = std::min(offset, text.size());
    line = 1;
    column = 1;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
}

std::string without_offset(const std::string& message) {
    const auto at = message.rfind(" at ");
    return at == std::string::npos ? message : message.substr(0, at);
}

// Sections need real booleans, but Cloudflare-style templates also print them ({{queueAll}} →
// "true"), and kainjow prints nothing for a boolean. So a plain variable tag naming a boolean is
// renamed at compile time to a string twin. Only the default {{ }} delimiters are handled.
constexpr std::array<std::string_view, 11> boolean_names = {
    "inWaitingRoom", "waitTimeKnown",      "queueIsFull",        "queueAll",
    "isFIFOQueue",   "isRandomQueue",      "isPassthroughQueue", "isRejectQueue",
    "isEventActive", "isEventPrequeueing", "shuffleAtEventStart"};
constexpr std::string_view text_suffix = "__text";

std::string with_boolean_text(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 64);
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto open = text.find("{{", pos);
        if (open == std::string_view::npos) {
            break;
        }
        const auto close = text.find("}}", open + 2);
        if (close == std::string_view::npos) {
            break;
        }
        auto name = text.substr(open + 2, close - open - 2);
        while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) {
            name.remove_prefix(1);
        }
        while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) {
            name.remove_suffix(1);
        }
        out.append(text.substr(pos, close + 2 - pos));
        if (std::find(boolean_names.begin(), boolean_names.end(), name) != boolean_names.end()) {
            out.resize(out.size() - (close + 2 - open));
            out.append("{{").append(name).append(text_suffix).append("}}");
        }
        pos = close + 2;
    }
    out.append(text.substr(std::min(pos, text.size())));
    return out;
}

// A compiled template plus how its variables are filled.
struct compiled {
    mustache::mustache tmpl;
    std::string language;  // built-in language of the texts
    bool builtin = false;  // built-in pages get *Formatted values in their own language
};

// The unit's own mustache data from a model; numbers become decimal strings, booleans sections.
mustache::data to_data(const room::page_model& m, const compiled& c) {
    const bool localize = c.builtin && c.language != "en-US";
    const auto num = [](std::int64_t v) { return mustache::data{std::to_string(v)}; };
    const auto text = [](std::string_view v) { return mustache::data{std::string(v)}; };
    mustache::data d;
    const auto flag = [&d](std::string_view name, bool v) {
        d.set(std::string(name), mustache::data{v});
        d.set(std::string(name).append(text_suffix), mustache::data{v ? "true" : "false"});
    };
    flag("inWaitingRoom", m.in_waiting_room);
    flag("waitTimeKnown", m.wait_time_known);
    d.set("waitTime", num(m.wait_time));
    d.set("waitTimeFormatted", localize ? text(format_minutes_in(c.language, m.wait_time))
                                        : text(m.wait_time_formatted));
    d.set("waitTimeHours", num(m.wait_time_hours));
    d.set("waitTimeHourMinutes", num(m.wait_time_hour_minutes));
    d.set("waitTime25Percentile", num(m.wait_time_25_percentile));
    d.set("waitTime50Percentile", num(m.wait_time_50_percentile));
    d.set("waitTime75Percentile", num(m.wait_time_75_percentile));
    flag("queueIsFull", m.queue_is_full);
    flag("queueAll", m.queue_all);
    d.set("lastUpdated", text(m.last_updated));
    d.set("refreshIntervalSeconds", num(m.refresh_interval_seconds));
    d.set("queueingMethod", text(m.queueing_method));
    flag("isFIFOQueue", m.is_fifo_queue);
    flag("isRandomQueue", m.is_random_queue);
    flag("isPassthroughQueue", m.is_passthrough_queue);
    flag("isRejectQueue", m.is_reject_queue);
    flag("isEventActive", m.is_event_active);
    flag("isEventPrequeueing", m.is_event_prequeueing);
    d.set("timeUntilEventStart", num(m.time_until_event_start));
    d.set("timeUntilEventStartFormatted",
          localize ? text(format_minutes_in(c.language, m.time_until_event_start))
                   : text(m.time_until_event_start_formatted));
    d.set("timeUntilEventEnd", num(m.time_until_event_end));
    d.set("timeUntilEventEndFormatted",
          localize ? text(format_minutes_in(c.language, m.time_until_event_end))
                   : text(m.time_until_event_end_formatted));
    flag("shuffleAtEventStart", m.shuffle_at_event_start);
    d.set("queuePosition", num(m.queue_position));
    d.set("roomName", text(m.room_name));
    // Ours, for the built-in page; custom templates may use it too.
    d.set("progressPercent", num(progress_percent(m.queue_position)));
    return d;
}

// The pages' context: mustache's own, except that a partial ({{>name}}) names nothing. Mustache
// would render the value of `name` as a template of its own, so a value that names itself (a room
// name "{{>roomName}}" under a page with {{>roomName}}) recursed until the stack ran out, and
// any text reaching the model would be run as a template. No page here uses partials.
class page_context final : public mustache::context<std::string> {
  public:
    using mustache::context<std::string>::context;
    const mustache::data* get_partial(const std::string&) const override { return nullptr; }
};

std::string render(mustache::mustache& tmpl, const compiled& c, const room::page_model& m) {
    const mustache::data data = to_data(m, c);
    page_context ctx{&data};
    std::ostringstream out;
    tmpl.render(ctx, out);
    return std::move(out).str();
}

struct room_entry {
    std::size_t queue_template = 0;   // index into impl::templates
    std::size_t reject_template = 0;  // used when custom
    bool custom = false;              // room has custom_page_html
    page_body reject_static;          // built-in reject page, rendered at load
    std::vector<std::pair<std::string, std::size_t>> events;  // event name → custom template
};

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct page_templates::impl {
    std::vector<compiled> templates;  // built-in queue pages first, one per language, then custom
    std::vector<page_body> builtin_rejects;  // per language, for rooms not in the config
    std::unordered_map<std::string, room_entry, string_hash, std::equal_to<>> rooms;
    room_entry fallback;  // unknown room: en-US built-ins
};

page_templates::page_templates() : impl_(std::make_unique<impl>()) {}
page_templates::~page_templates() = default;

std::span<const std::string_view> page_templates::languages() {
    return builtin_languages;
}

std::string_view page_templates::resolve_language(std::string_view requested) {
    const auto want = lower(requested);
    for (const auto lang : builtin_languages) {
        if (lower(lang) == want) {
            return lang;
        }
    }
    const auto primary = want.substr(0, want.find('-'));
    for (const auto lang : builtin_languages) {
        if (lower(lang.substr(0, lang.find('-'))) == primary) {
            return lang;
        }
    }
    return builtin_languages[0];
}

std::string page_templates::compile_error(std::string_view text) {
    const mustache::mustache tmpl{std::string(text)};
    if (tmpl.is_valid()) {
        return {};
    }
    int line = 0;
    int column = 0;
    locate(text, tmpl.error_message(), line, column);
    if (line == 0) {
        return tmpl.error_message();
    }
    return std::to_string(line) + ":" + std::to_string(column) + ": " +
           without_offset(tmpl.error_message());
}

page_templates::load_result page_templates::load(const config::config& cfg) {
    auto out = std::shared_ptr<page_templates>(new page_templates());
    auto& t = *out->impl_;
    std::vector<config::problem> problems;

    // Compiles `text` into t.templates; returns its index or npos with a problem recorded.
    const auto add = [&](std::string_view text, const std::string& file, const std::string& path,
                         std::string language, bool builtin) -> std::size_t {
        // The text as written first, so an error's line:column point into the operator's file.
        const mustache::mustache as_written{std::string(text)};
        if (!as_written.is_valid()) {
            config::problem p;
            p.file = file;
            p.path = path;
            locate(text, as_written.error_message(), p.line, p.column);
            p.message = "template does not compile: " + without_offset(as_written.error_message());
            problems.push_back(std::move(p));
            return std::string::npos;
        }
        t.templates.push_back(
            compiled{mustache::mustache{with_boolean_text(text)}, std::move(language), builtin});
        return t.templates.size() - 1;
    };
    const auto read = [&](const std::string& file, const std::string& path, std::string& text) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            problems.push_back({file, 0, 0, path,
                                std::string("cannot read template file: ") + std::strerror(errno)});
            return false;
        }
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
        return true;
    };

    // Built-in pages: queue templates at indices 0..n-1 (same order as builtin_languages).
    std::vector<std::size_t> reject_index;
    for (const auto lang : builtin_languages) {
        const std::string name = "queue." + std::string(lang);
        add(builtin_text(name), "templates/" + name + ".html", "(built-in)", std::string(lang),
            true);
    }
    for (const auto lang : builtin_languages) {
        const std::string name = "reject." + std::string(lang);
        reject_index.push_back(add(builtin_text(name), "templates/" + name + ".html", "(built-in)",
                                   std::string(lang), true));
    }
    if (!problems.empty()) {
        return {nullptr, std::move(problems)};
    }
    const auto static_reject = [&](std::size_t lang_index, const std::string& room_name) {
        auto& c = t.templates[reject_index[lang_index]];
        room::page_model m;
        m.room_name = room_name;
        m.is_reject_queue = true;
        m.is_fifo_queue = false;
        m.queueing_method = "reject";
        return std::make_shared<const std::string>(render(c.tmpl, c, m));
    };
    for (std::size_t i = 0; i < builtin_languages.size(); ++i) {
        t.builtin_rejects.push_back(static_reject(i, ""));
    }
    t.fallback.queue_template = 0;
    t.fallback.reject_static = t.builtin_rejects[0];

    for (std::size_t r = 0; r < cfg.rooms.size(); ++r) {
        const auto& room = cfg.rooms[r];
        const std::string where = "rooms[" + std::to_string(r) + "]";
        const auto lang = resolve_language(room.default_template_language);
        const auto lang_index = static_cast<std::size_t>(
            std::find(builtin_languages.begin(), builtin_languages.end(), lang) -
            builtin_languages.begin());
        room_entry e;
        e.queue_template = lang_index;
        if (!room.custom_page_html.empty()) {
            std::string text;
            const auto path = where + ".custom_page_html";
            if (read(room.custom_page_html, path, text)) {
                const auto idx = add(text, room.custom_page_html, path, std::string(lang), false);
                if (idx != std::string::npos) {
                    e.custom = true;
                    e.queue_template = idx;
                    e.reject_template = idx;
                }
            }
        }
        if (!e.custom) {
            e.reject_static = static_reject(lang_index, room.name);
        }
        for (std::size_t v = 0; v < room.events.size(); ++v) {
            const auto& ev = room.events[v];
            if (!ev.custom_page_html || ev.custom_page_html->empty()) {
                continue;
            }
            std::string text;
            const auto path = where + ".events[" + std::to_string(v) + "].custom_page_html";
            if (read(*ev.custom_page_html, path, text)) {
                const auto idx = add(text, *ev.custom_page_html, path, std::string(lang), false);
                if (idx != std::string::npos) {
                    e.events.emplace_back(ev.name, idx);
                }
            }
        }
        t.rooms.insert_or_assign(room.id, std::move(e));
    }
    if (!problems.empty()) {
        return {nullptr, std::move(problems)};
    }
    return {std::move(out), {}};
}

// ---------------------------------------------------------------------------------------------

namespace {

enum class page_kind : std::uint8_t { queue, reject, json };

struct slot {
    bool used = false;
    page_kind kind = page_kind::queue;
    std::uint64_t stamp = 0;  // last use, for choosing the way to evict
    std::string room_id;
    std::string event;
    page_key key;
    room::page_model model;  // its queueing_method view is cleared: it may not outlive a reload
    std::string method;      // the model's queueing_method, owned
    page_body body;
};

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    // splitmix64 step: cheap and spreads sequential versions and bands over the slots
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h;
}

}  // namespace

struct page_renderer::impl {
    std::shared_ptr<const page_templates> templates;
    std::vector<compiled> own;  // this thread's copies: kainjow's render is not const
    std::vector<slot> slots;    // 2-way set-associative, size a power of two
    std::uint64_t tick = 0;
    std::uint64_t newest = 0;  // the newest state version asked for
    cache_stats stats;

    // A page of a state version before the last two can never be asked for again (the key
    // carries the version, and versions only grow): its slot is emptied when a new version
    // appears, so the cache holds the pages of the live state, not up to its size in dead ones.
    void forget_before(std::uint64_t version) {
        if (version <= newest) {
            return;
        }
        newest = version;
        for (auto& s : slots) {
            if (s.used && s.key.state_version + 1 < newest) {
                s = slot{};
            }
        }
    }

    void adopt(std::shared_ptr<const page_templates> t) {
        templates = std::move(t);
        own = templates->impl_->templates;
        for (auto& s : slots) {
            s = slot{};
        }
    }

    const room_entry& entry(std::string_view room_id) const {
        const auto& rooms = templates->impl_->rooms;
        const auto it = rooms.find(room_id);
        return it == rooms.end() ? templates->impl_->fallback : it->second;
    }

    // Finds the cached body or renders it with `make` into the older way of the set.
    template <typename Make>
    page_body lookup(page_kind kind, std::string_view room_id, std::string_view event,
                     const page_key& key, const room::page_model& model, Make&& make) {
        std::uint64_t h = std::hash<std::string_view>{}(room_id);
        h = mix(h, std::hash<std::string_view>{}(event));
        h = mix(h, key.state_version);
        h = mix(h, key.band);
        h = mix(h, static_cast<std::uint64_t>(kind));
        const std::size_t base = static_cast<std::size_t>(h) & (slots.size() - 1) & ~std::size_t{1};
        ++tick;
        forget_before(key.state_version);
        for (std::size_t way = 0; way < 2; ++way) {
            auto& s = slots[base + way];
            if (s.used && s.kind == kind && s.key.state_version == key.state_version &&
                s.key.band == key.band && s.room_id == room_id && s.event == event &&
                s.method == model.queueing_method && same_values(s.model, model)) {
                s.stamp = tick;
                ++stats.hits;
                return s.body;
            }
        }
        ++stats.misses;
        auto& a = slots[base];
        auto& b = slots[base + 1];
        auto& victim = !a.used ? a : !b.used ? b : (a.stamp <= b.stamp ? a : b);
        victim.used = true;
        victim.kind = kind;
        victim.stamp = tick;
        victim.room_id.assign(room_id);
        victim.event.assign(event);
        victim.key = key;
        victim.model = model;
        victim.model.queueing_method = {};
        victim.method.assign(model.queueing_method);
        victim.body = std::make_shared<const std::string>(make());
        return victim.body;
    }

    std::string render_index(std::size_t index, const room::page_model& model) {
        auto& c = own[index];
        return render(c.tmpl, c, model);
    }
};

page_renderer::page_renderer(std::shared_ptr<const page_templates> templates,
                             std::size_t cache_slots)
    : impl_(std::make_unique<impl>()) {
    std::size_t n = 2;
    while (n < cache_slots) {
        n <<= 1;
    }
    impl_->slots.resize(n);
    impl_->adopt(std::move(templates));
}

page_renderer::~page_renderer() = default;

void page_renderer::set_templates(std::shared_ptr<const page_templates> templates) {
    impl_->adopt(std::move(templates));
}

page_body page_renderer::queue_page(std::string_view room_id, std::string_view event_name,
                                    const page_key& key, const room::page_model& model) {
    const auto& e = impl_->entry(room_id);
    std::size_t index = e.queue_template;
    if (!event_name.empty()) {
        for (const auto& [name, idx] : e.events) {
            if (name == event_name) {
                index = idx;
                break;
            }
        }
    }
    return impl_->lookup(page_kind::queue, room_id, event_name, key, model,
                         [&] { return impl_->render_index(index, model); });
}

page_body page_renderer::reject_page(std::string_view room_id, const page_key& key,
                                     const room::page_model& model) {
    const auto& e = impl_->entry(room_id);
    if (!e.custom) {
        return e.reject_static;
    }
    return impl_->lookup(page_kind::reject, room_id, {}, key, model,
                         [&] { return impl_->render_index(e.reject_template, model); });
}

page_body page_renderer::json(std::string_view room_id, const page_key& key,
                              const room::page_model& model) {
    return impl_->lookup(page_kind::json, room_id, {}, key, model,
                         [&] { return render_json(model); });
}

page_renderer::cache_stats page_renderer::stats() const {
    cache_stats out = impl_->stats;
    out.entries = static_cast<std::size_t>(std::count_if(
        impl_->slots.begin(), impl_->slots.end(), [](const slot& s) { return s.used; }));
    return out;
}

// ---------------------------------------------------------------------------------------------

std::string render_json(const room::page_model& m) {
    nlohmann::ordered_json o;
    o["inWaitingRoom"] = m.in_waiting_room;
    o["waitTimeKnown"] = m.wait_time_known;
    o["waitTime"] = m.wait_time;
    o["waitTimeFormatted"] = m.wait_time_formatted;
    o["waitTimeHours"] = m.wait_time_hours;
    o["waitTimeHourMinutes"] = m.wait_time_hour_minutes;
    o["waitTime25Percentile"] = m.wait_time_25_percentile;
    o["waitTime50Percentile"] = m.wait_time_50_percentile;
    o["waitTime75Percentile"] = m.wait_time_75_percentile;
    o["queueIsFull"] = m.queue_is_full;
    o["queueAll"] = m.queue_all;
    o["lastUpdated"] = m.last_updated;
    o["refreshIntervalSeconds"] = m.refresh_interval_seconds;
    o["queueingMethod"] = std::string(m.queueing_method);
    o["isFIFOQueue"] = m.is_fifo_queue;
    o["isRandomQueue"] = m.is_random_queue;
    o["isPassthroughQueue"] = m.is_passthrough_queue;
    o["isRejectQueue"] = m.is_reject_queue;
    o["isEventActive"] = m.is_event_active;
    o["isEventPrequeueing"] = m.is_event_prequeueing;
    o["timeUntilEventStart"] = m.time_until_event_start;
    o["timeUntilEventStartFormatted"] = m.time_until_event_start_formatted;
    o["timeUntilEventEnd"] = m.time_until_event_end;
    o["timeUntilEventEndFormatted"] = m.time_until_event_end_formatted;
    o["shuffleAtEventStart"] = m.shuffle_at_event_start;
    o["queuePosition"] = m.queue_position;
    o["roomName"] = m.room_name;
    nlohmann::ordered_json root;
    root["cfWaitingRoom"] = std::move(o);
    // `replace`: a room name with invalid UTF-8 must not throw on the request path.
    return root.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string format_minutes_in(std::string_view language, std::int64_t minutes) {
    minutes = std::max<std::int64_t>(minutes, 0);
    const auto hours = minutes / 60;
    const auto rest = minutes % 60;
    const auto lang = page_templates::resolve_language(language);
    if (lang == "ja-JP") {
        std::string out;
        if (hours > 0) {
            out += std::to_string(hours) + "時間";
        }
        if (rest > 0 || hours == 0) {
            out += std::to_string(rest) + "分";
        }
        return out;
    }
    struct words {
        const char* hour;
        const char* hours;
        const char* minute;
        const char* minutes;
        bool zero_is_singular;  // French: "0 minute"
    };
    const words w = lang == "de-DE"   ? words{"Stunde", "Stunden", "Minute", "Minuten", false}
                    : lang == "fr-FR" ? words{"heure", "heures", "minute", "minutes", true}
                                      : words{"hour", "hours", "minute", "minutes", false};
    const auto unit = [&](std::int64_t n, const char* one, const char* many) {
        const bool singular = n == 1 || (n == 0 && w.zero_is_singular);
        return std::to_string(n) + " " + (singular ? one : many);
    };
    std::string out;
    if (hours > 0) {
        out = unit(hours, w.hour, w.hours);
    }
    if (rest > 0 || hours == 0) {
        if (!out.empty()) {
            out += ' ';
        }
        out += unit(rest, w.minute, w.minutes);
    }
    return out;
}

int progress_percent(std::int64_t queue_position) {
    if (queue_position <= 0) {
        return 100;
    }
    // 1 ahead → 92, 10 → 74, 100 → 50, 1000 → 25; never below 3 so the bar stays visible.
    const double p = 100.0 - 25.0 * std::log10(static_cast<double>(queue_position) + 1.0);
    return std::clamp(static_cast<int>(std::lround(p)), 3, 100);
}

}  // namespace waitroom::pages
