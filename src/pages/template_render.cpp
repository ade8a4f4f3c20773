// How a page model renders through a compiled template: the model as mustache data (numbers as
// decimal strings, booleans as sections with a printable twin), and a context without partials.
#include "templates_internal.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace waitroom::pages::detail {

namespace {

// Sections need real booleans, but Cloudflare-style templates also print them ({{queueAll}} →
// "true"), and kainjow prints nothing for a boolean. So a plain variable tag naming a boolean is
// renamed at compile time to a string twin. Only the default {{ }} delimiters are handled.
constexpr std::array<std::string_view, 11> boolean_names = {
    "inWaitingRoom", "waitTimeKnown",      "queueIsFull",        "queueAll",
    "isFIFOQueue",   "isRandomQueue",      "isPassthroughQueue", "isRejectQueue",
    "isEventActive", "isEventPrequeueing", "shuffleAtEventStart"};
constexpr std::string_view text_suffix = "__text";

}  // namespace

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

namespace {

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

}  // namespace

std::string render(mustache::mustache& tmpl, const compiled& c, const room::page_model& m) {
    const mustache::data data = to_data(m, c);
    page_context ctx{&data};
    std::ostringstream out;
    tmpl.render(ctx, out);
    return std::move(out).str();
}

}  // namespace waitroom::pages::detail
