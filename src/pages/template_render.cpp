// How a page model renders through a compiled template: the model as mustache data (numbers as
// decimal strings, booleans as sections with a printable twin), and a context without partials.
#include "templates_internal.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "waitroom/util/clock.hpp"

namespace waitroom::pages::detail {

namespace {

// Sections need real booleans, but Cloudflare-style templates also print them ({{queueAll}} →
// "true"), and kainjow prints nothing for a boolean. So a plain variable tag naming a boolean is
// renamed at compile time to a string twin.
constexpr std::array<std::string_view, 14> boolean_names = {
    "inWaitingRoom",     "waitTimeKnown",      "queueIsFull",         "queueAll",
    "isFIFOQueue",       "isRandomQueue",      "isPassthroughQueue",  "isRejectQueue",
    "isEventActive",     "isEventPrequeueing", "shuffleAtEventStart", "admissionSoundEnabled",
    "challengeRequired", "originUnavailable"};
constexpr std::string_view text_suffix = "__text";

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
        s.remove_prefix(1);
    }
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
        s.remove_suffix(1);
    }
    return s;
}

// A set-delimiter tag's contents ("=<% %>="), read as kainjow reads it; false when it is not
// one kainjow accepts.
bool read_delimiters(std::string_view tag, std::string& begin, std::string& end) {
    if (tag.size() < 5 || tag.back() != '=') {
        return false;
    }
    const auto inner = trimmed(tag.substr(1, tag.size() - 2));
    const auto space = inner.find(' ');
    if (space == std::string_view::npos) {
        return false;
    }
    const auto next = inner.find_first_not_of(' ', space + 1);
    if (next == std::string_view::npos) {
        return false;
    }
    const auto valid = [](std::string_view d) {
        return std::none_of(d.begin(), d.end(), [](char c) {
            return c == '=' || std::isspace(static_cast<unsigned char>(c));
        });
    };
    const auto b = inner.substr(0, space);
    const auto e = inner.substr(next);
    if (!valid(b) || !valid(e)) {
        return false;
    }
    begin.assign(b);
    end.assign(e);
    return true;
}

}  // namespace

// Walks the tags as kainjow's parser does, delimiters changed by `{{=<% %>=}}` included, so
// that only real variable tags are renamed, in the delimiters in force where they stand. Text
// that is not a tag, set-delimiter tags and every other tag are copied as written.
std::string with_boolean_text(std::string_view text) {
    std::string begin = "{{";
    std::string end = "}}";
    std::string out;
    out.reserve(text.size() + 64);
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto open = text.find(begin, pos);
        if (open == std::string_view::npos) {
            break;
        }
        auto contents = open + begin.size();
        // {{{name}}}: unescaped, closed by "}}}", under the default delimiters only.
        const bool unescaped =
            begin == "{{" && end == "}}" && contents < text.size() && text[contents] == '{';
        if (unescaped) {
            ++contents;
        }
        const std::string_view close_with = unescaped ? std::string_view("}}}") : end;
        const auto close = text.find(close_with, contents);
        if (close == std::string_view::npos) {
            break;
        }
        const auto tag = trimmed(text.substr(contents, close - contents));
        const auto after = close + close_with.size();
        out.append(text.substr(pos, open - pos));
        if (!unescaped && !tag.empty() && tag.front() == '=') {
            if (!read_delimiters(tag, begin, end)) {
                pos = open;  // kainjow refuses the template here: keep the rest as written
                break;
            }
            out.append(text.substr(open, after - open));
        } else if (!unescaped && std::find(boolean_names.begin(), boolean_names.end(), tag) !=
                                     boolean_names.end()) {
            out.append(begin).append(tag).append(text_suffix).append(end);
        } else {
            out.append(text.substr(open, after - open));
        }
        pos = after;
    }
    out.append(text.substr(std::min(pos, text.size())));
    return out;
}

namespace {

// The unit's own mustache data from a model; numbers become decimal strings, booleans sections.
mustache::data to_data(const room::page_model& m, const compiled& c,
                       const room_page_options& options) {
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
    flag("originUnavailable", m.origin_unavailable);
    d.set("lastUpdated", text(util::iso8601_utc(m.last_updated_ms)));
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
    d.set("waitTimeSeconds", num(m.wait_time_seconds));
    d.set("waitTimeSecondsFormatted",
          text(format_wait_in(localize ? c.language : "en-US", m.wait_time_seconds, m.wait_time)));
    // Ours, for the built-in page; custom templates may use them too.
    d.set("progressPercent", num(progress_percent(m.queue_position)));
    // The tab title's "(12) ": the position where the page shows one (a FIFO queue), else "".
    d.set("queuePositionTitle",
          text(m.in_waiting_room && m.is_fifo_queue ? "(" + std::to_string(m.queue_position) + ") "
                                                    : std::string()));
    flag("admissionSoundEnabled", options.admission_sound);
    // Proof of work on joining: the seed is the visitor's own, so it is not in the page (which
    // stays the same bytes for every visitor, compressed once) but in the cookie named here.
    flag("challengeRequired", m.challenge_required);
    d.set("challengeDifficulty", num(m.challenge_difficulty));
    d.set("challengeCookie", text(m.challenge_required ? options.challenge_cookie : ""));
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

}  // namespace

std::string render(mustache::mustache& tmpl, const compiled& c, const room::page_model& m,
                   const room_page_options& options) {
    const mustache::data data = to_data(m, c, options);
    page_context ctx{&data};
    std::ostringstream out;
    tmpl.render(ctx, out);
    return std::move(out).str();
}

}  // namespace waitroom::pages::detail
