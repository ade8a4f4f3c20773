// The compiled templates of one config snapshot: the built-in queue and reject pages per
// language, every room's and event's custom_page_html, and the errors they give with their
// line:column. Compiled once per config and shared read-only by the workers.
#include "templates_internal.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "builtin_templates.hpp"

namespace waitroom::pages {

using detail::builtin_languages;
using detail::compiled;
using detail::room_entry;

namespace {

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

// A built-in page with the shared pieces it names put in place: a line `{{! include NAME }}`
// becomes the text of templates/NAME. In a copy made for a custom page the line is a mustache
// comment and renders nothing, so the copy still works (without the shared style and script).
std::string with_includes(std::string_view text) {
    std::string out;
    std::size_t pos = 0;
    constexpr std::string_view open = "{{! include ";
    constexpr std::string_view close = " }}";
    while (true) {
        const auto at = text.find(open, pos);
        const auto end = at == std::string_view::npos ? at : text.find(close, at + open.size());
        if (end == std::string_view::npos) {
            break;
        }
        out.append(text.substr(pos, at - pos));
        out.append(builtin_text(text.substr(at + open.size(), end - at - open.size())));
        pos = end + close.size();
    }
    out.append(text.substr(pos));
    return out;
}

std::size_t language_index(std::string_view language) {
    const auto lang = page_templates::resolve_language(language);
    return static_cast<std::size_t>(
        std::find(builtin_languages.begin(), builtin_languages.end(), lang) -
        builtin_languages.begin());
}

// What a preview shows in `state`: a queue in the middle of a busy hour, an event 95 minutes off,
// a turned-away visitor. Fixed values, so that a preview is the same from one call to the next.
room::page_model sample_model(const config::room& room, preview_state state) {
    room::page_model m;
    m.room_name = room.name;
    m.refresh_interval_seconds =
        std::chrono::duration_cast<std::chrono::seconds>(room.refresh_interval).count();
    m.last_updated_ms = 1767268800000;
    const bool random = room.method == config::queueing_method::random;
    m.queueing_method = random ? "random" : "fifo";
    m.is_fifo_queue = !random;
    m.is_random_queue = random;
    if (state == preview_state::reject) {
        m.queueing_method = "reject";
        m.is_fifo_queue = false;
        m.is_random_queue = false;
        m.is_reject_queue = true;
        return m;
    }
    m.in_waiting_room = true;
    m.queue_is_full = true;
    m.queue_position = 137;
    if (state == preview_state::event) {
        m.queue_all = true;
        m.is_event_prequeueing = true;
        m.time_until_event_start = 95;
        m.time_until_event_start_formatted = room::format_minutes(95);
        m.time_until_event_end = 215;
        m.time_until_event_end_formatted = room::format_minutes(215);
        m.shuffle_at_event_start =
            !room.events.empty() && room.events.front().shuffle_at_event_start;
        return m;
    }
    m.wait_time_known = true;
    m.wait_time = 12;
    m.wait_time_formatted = room::format_minutes(12);
    m.wait_time_hour_minutes = 12;
    m.wait_time_seconds = 710;
    m.wait_time_25_percentile = 4;
    m.wait_time_50_percentile = 9;
    m.wait_time_75_percentile = 15;
    return m;
}

}  // namespace

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
        // The rewrite keeps a template valid (the page_render fuzzer checks it); were it ever
        // not to, the page would still render as written, its booleans printing nothing.
        mustache::mustache rewritten{detail::with_boolean_text(text)};
        t.templates.push_back(compiled{rewritten.is_valid() ? std::move(rewritten) : as_written,
                                       std::move(language), builtin});
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
        add(with_includes(builtin_text(name)), "templates/" + name + ".html", "(built-in)",
            std::string(lang), true);
    }
    for (const auto lang : builtin_languages) {
        const std::string name = "reject." + std::string(lang);
        reject_index.push_back(add(with_includes(builtin_text(name)), "templates/" + name + ".html",
                                   "(built-in)", std::string(lang), true));
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
        return rendered_page::compress(detail::render(c.tmpl, c, m));
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
        const auto lang_index = language_index(lang);
        room_entry e;
        e.queue_template = lang_index;
        e.options.admission_sound = room.admission_sound_enabled;
        e.options.challenge_cookie = room::challenge_cookie_name(room.cookie_suffix);
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

std::string page_templates::preview(const config::room& room, preview_state state,
                                    std::string_view language) const {
    const auto& t = *impl_;
    const auto it = t.rooms.find(room.id);
    const room_entry& e = it == t.rooms.end() ? t.fallback : it->second;
    const auto lang = language_index(language.empty() ? room.default_template_language : language);
    std::size_t index = lang;
    if (state == preview_state::reject) {
        index = e.custom ? e.reject_template : builtin_languages.size() + lang;
    } else if (e.custom) {
        index = e.queue_template;
        if (state == preview_state::event && !room.events.empty()) {
            for (const auto& [name, idx] : e.events) {
                if (name == room.events.front().name) {
                    index = idx;
                    break;
                }
            }
        }
    }
    // A copy: kainjow's render is not const, and these templates are shared by the workers.
    compiled c = t.templates[index];
    return detail::render(c.tmpl, c, sample_model(room, state), e.options);
}

}  // namespace waitroom::pages
