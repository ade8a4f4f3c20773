// libFuzzer entry point for the page renderer: a room's custom_page_html (the bytes up to the
// first NUL) compiled as a config load compiles it (the boolean-text rewrite included), then
// rendered with a model taken from the bytes after the NUL, as are the JSON and (for an empty
// template) the built-in pages. Nothing may crash; compile_error must agree with the compiler, and
// a template that compiles as written must still compile once rewritten. The internals are reached
// through the pages' private header (templates_internal.hpp) and fuzzed directly: loading a whole
// page_templates compiles every built-in page first, which would cost a second per input. Built by tests/fuzz/run.sh with clang;
// also replayed by page_render_fuzz_replay under g++.

#include "templates_internal.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

using namespace waitroom;
using namespace waitroom::pages::detail;

// Reads the model's fields off the bytes, in order; zeros once they run out.
class reader {
  public:
    explicit reader(std::string_view bytes) : rest_(bytes) {}

    std::int64_t number() {
        std::int64_t v = 0;
        const std::size_t n = std::min(rest_.size(), sizeof v);
        if (n > 0) {
            std::memcpy(&v, rest_.data(), n);
            rest_.remove_prefix(n);
        }
        return v;
    }
    bool flag() { return (number() & 1) != 0; }
    std::string text() {
        const std::size_t n = std::min<std::size_t>(rest_.empty() ? 0 : std::uint8_t(rest_[0]),
                                                    rest_.size() - (rest_.empty() ? 0 : 1));
        if (!rest_.empty()) {
            rest_.remove_prefix(1);
        }
        std::string s(rest_.substr(0, n));
        rest_.remove_prefix(n);
        return s;
    }

  private:
    std::string_view rest_;
};

room::page_model model_from(std::string_view bytes) {
    reader r(bytes);
    room::page_model m;
    m.room_name = r.text();
    m.in_waiting_room = r.flag();
    m.queue_position = r.number();
    m.wait_time_known = r.flag();
    m.wait_time = r.number();
    m.wait_time_formatted = r.text();
    m.wait_time_hours = r.number();
    m.wait_time_hour_minutes = r.number();
    m.wait_time_25_percentile = r.number();
    m.wait_time_50_percentile = r.number();
    m.wait_time_75_percentile = r.number();
    // derived: the corpus keeps its meaning (wrapping as the corpus' numbers may be any)
    m.wait_time_seconds = static_cast<std::int64_t>(static_cast<std::uint64_t>(m.wait_time) * 60u);
    m.queue_is_full = r.flag();
    m.queue_all = r.flag();
    m.last_updated_ms = r.number();
    m.refresh_interval_seconds = r.number();
    m.is_event_active = r.flag();
    m.is_event_prequeueing = r.flag();
    m.time_until_event_start = r.number();
    m.time_until_event_start_formatted = r.text();
    m.time_until_event_end = r.number();
    m.time_until_event_end_formatted = r.text();
    m.shuffle_at_event_start = r.flag();
    return m;
}

// The built-in pages, compiled once: one room per built-in language, named after it.
pages::page_renderer& builtin_renderer() {
    static pages::page_renderer r(
        [] {
            config::config cfg;
            for (const auto lang : pages::page_templates::languages()) {
                cfg.rooms.emplace_back();
                cfg.rooms.back().id = std::string(lang);
                cfg.rooms.back().name = std::string(lang);
                cfg.rooms.back().default_template_language = std::string(lang);
            }
            return pages::page_templates::load(cfg).templates;
        }(),
        4);
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace waitroom::pages;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = bytes.find('\0');
    const std::string_view text = bytes.substr(0, nul);
    const room::page_model model =
        model_from(nul == std::string_view::npos ? std::string_view{} : bytes.substr(nul + 1));
    const std::string_view language =
        builtin_languages[model.queue_position & (builtin_languages.size() - 1)];

    // The custom template, as page_templates::load compiles and renders it.
    const std::string error = page_templates::compile_error(text);
    const mustache::mustache as_written{std::string(text)};
    if (as_written.is_valid() != error.empty()) {
        std::abort();
    }
    if (as_written.is_valid()) {
        compiled c{mustache::mustache{with_boolean_text(text)}, std::string(language), false};
        if (!c.tmpl.is_valid()) {
            std::abort();
        }
        (void)render(c.tmpl, c, model);
    }

    // The JSON, and with no template (the bytes start with NUL) the built-in pages, with the
    // same model (they are large: rendering them for every input would slow the search).
    (void)render_json(model);
    if (text.empty()) {
        auto& r = builtin_renderer();
        const page_key key{static_cast<std::uint64_t>(model.last_updated_ms), 0};
        if (!r.queue_page(language, "", key, model) || !r.reject_page(language, key, model) ||
            !r.json(language, key, model) || !r.queue_page("unknown", "", key, model)) {
            std::abort();
        }
    }
    (void)format_minutes_in(language, model.wait_time);
    (void)progress_percent(model.queue_position);
    (void)page_templates::resolve_language(text.substr(0, 16));
    return 0;
}
