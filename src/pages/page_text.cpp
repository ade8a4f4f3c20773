// The texts the built-in pages compute in their own language: a wait in words, and the
// progress bar's value.
#include "waitroom/pages/page_renderer.hpp"

#include <algorithm>
#include <cmath>

namespace waitroom::pages {

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

std::string format_wait_in(std::string_view language, std::int64_t seconds, std::int64_t minutes) {
    // Beyond 10 minutes seconds are noise the visitor need not read.
    if (seconds <= 0 || seconds >= 600) {
        return format_minutes_in(language, minutes);
    }
    const auto m = seconds / 60;
    const auto sec = seconds % 60;
    const auto lang = page_templates::resolve_language(language);
    if (lang == "ja-JP") {
        std::string out;
        if (m > 0) {
            out += std::to_string(m) + "分";
        }
        if (sec > 0) {
            out += std::to_string(sec) + "秒";
        }
        return out;
    }
    struct words {
        const char* minute;
        const char* minutes;
        const char* second;
        const char* seconds;
    };
    const words w = lang == "de-DE"   ? words{"Minute", "Minuten", "Sekunde", "Sekunden"}
                    : lang == "fr-FR" ? words{"minute", "minutes", "seconde", "secondes"}
                                      : words{"minute", "minutes", "second", "seconds"};
    std::string out;
    if (m > 0) {
        out = std::to_string(m) + " " + (m == 1 ? w.minute : w.minutes);
    }
    if (sec > 0) {
        if (!out.empty()) {
            out += ' ';
        }
        out += std::to_string(sec) + " " + (sec == 1 ? w.second : w.seconds);
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
