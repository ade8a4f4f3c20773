// The texts the built-in pages compute in their own language: a wait in words, and the
// progress bar's value.
#include "waitroom/pages/page_renderer.hpp"

#include <algorithm>
#include <cmath>

namespace waitroom::pages {

namespace {

// A unit's words in one language: singular, plural (Japanese has one suffix for both).
struct unit_words {
    const char* one;
    const char* many;
};
struct language_units {
    bool suffix;  // Japanese: "5分", no space, no plural
    unit_words hour, minute, second;
    bool zero_is_singular;  // French: "0 minute"
};

const language_units& units_of(std::string_view language) {
    static const language_units ja{true, {"時間", "時間"}, {"分", "分"}, {"秒", "秒"}, false};
    static const language_units de{
        false, {"Stunde", "Stunden"}, {"Minute", "Minuten"}, {"Sekunde", "Sekunden"}, false};
    static const language_units fr{
        false, {"heure", "heures"}, {"minute", "minutes"}, {"seconde", "secondes"}, true};
    static const language_units en{
        false, {"hour", "hours"}, {"minute", "minutes"}, {"second", "seconds"}, false};
    const auto lang = page_templates::resolve_language(language);
    return lang == "ja-JP" ? ja : lang == "de-DE" ? de : lang == "fr-FR" ? fr : en;
}

// "<big> <unit> <small> <unit>" in the language, each part only when asked for.
std::string two_units(const language_units& l, std::int64_t big, const unit_words& big_unit,
                      bool show_big, std::int64_t small, const unit_words& small_unit,
                      bool show_small) {
    std::string out;
    const auto add = [&](std::int64_t n, const unit_words& u) {
        const bool singular = n == 1 || (n == 0 && l.zero_is_singular);
        if (!out.empty() && !l.suffix) {
            out += ' ';
        }
        out += std::to_string(n);
        if (!l.suffix) {
            out += ' ';
        }
        out += singular ? u.one : u.many;
    };
    if (show_big) {
        add(big, big_unit);
    }
    if (show_small) {
        add(small, small_unit);
    }
    return out;
}

}  // namespace

std::string format_minutes_in(std::string_view language, std::int64_t minutes) {
    minutes = std::max<std::int64_t>(minutes, 0);
    const auto hours = minutes / 60;
    const auto rest = minutes % 60;
    const language_units& l = units_of(language);
    return two_units(l, hours, l.hour, hours > 0, rest, l.minute, rest > 0 || hours == 0);
}

std::string format_wait_in(std::string_view language, std::int64_t seconds, std::int64_t minutes) {
    // Beyond 10 minutes seconds are noise the visitor need not read.
    if (seconds <= 0 || seconds >= 600) {
        return format_minutes_in(language, minutes);
    }
    const auto m = seconds / 60;
    const auto sec = seconds % 60;
    const language_units& l = units_of(language);
    return two_units(l, m, l.minute, m > 0, sec, l.second, sec > 0);
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
