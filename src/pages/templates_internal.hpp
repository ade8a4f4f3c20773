#pragma once
// What the compiled templates (page_templates.cpp) share with the renderer's cache
// (page_renderer.cpp) and the page_render fuzzer: a compiled template, how a model renders
// through it (template_render.cpp), and where a room's pages are. Private to src/pages/.

#include <kainjow/mustache.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "waitroom/pages/page_renderer.hpp"
#include "waitroom/room/challenge_cookie.hpp"

namespace waitroom::pages {

namespace mustache = kainjow::mustache;

namespace detail {

inline constexpr std::array<std::string_view, 4> builtin_languages = {"en-US", "de-DE", "fr-FR",
                                                                      "ja-JP"};

// A compiled template plus how its variables are filled.
struct compiled {
    mustache::mustache tmpl;
    std::string language;  // built-in language of the texts
    bool builtin = false;  // built-in pages get *Formatted values in their own language
};

// What a room's settings add to its pages' values (ours, not Cloudflare's).
struct room_page_options {
    bool admission_sound = false;  // admissionSoundEnabled: rooms[].admission_sound_enabled
    // challengeCookie: the cookie that carries a challenged visitor's seed to the page's script
    std::string challenge_cookie{room::base_challenge_cookie_name};
};

// The template text with every plain variable tag that names a boolean renamed to its string
// twin (see template_render.cpp); compiled in place of the text as written.
std::string with_boolean_text(std::string_view text);

// The page of `m` through `tmpl` (c's own template or a thread's copy of it: kainjow's render is
// not const). Partials render nothing.
std::string render(mustache::mustache& tmpl, const compiled& c, const room::page_model& m,
                   const room_page_options& options = {});

struct room_entry {
    std::size_t queue_template = 0;   // index into impl::templates
    std::size_t reject_template = 0;  // used when custom
    bool custom = false;              // room has custom_page_html
    page_body reject_static;          // built-in reject page, rendered at load
    std::vector<std::pair<std::string, std::size_t>> events;  // event name → custom template
    room_page_options options;
};

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace detail

struct page_templates::impl {
    // Built-in queue pages first, one per language, then the built-in reject pages in the same
    // order, then custom.
    std::vector<detail::compiled> templates;
    std::vector<page_body> builtin_rejects;  // per language, for rooms not in the config
    std::unordered_map<std::string, detail::room_entry, detail::string_hash, std::equal_to<>> rooms;
    detail::room_entry fallback;  // unknown room: en-US built-ins
};

}  // namespace waitroom::pages
