#include "waitroom/room/page_model.hpp"

#include <charconv>
#include <cstring>

namespace waitroom::room {

namespace {
// Writes "<n> <unit>" at `p` (room for 20 digits and the word); returns the end. Formatted per
// queued answer, so into a buffer: one string made at the end, not one append per piece.
char* put_unit(char* p, std::int64_t n, std::string_view one, std::string_view many) {
    p = std::to_chars(p, p + 20, n).ptr;
    *p++ = ' ';
    const std::string_view word = n == 1 ? one : many;
    std::memcpy(p, word.data(), word.size());
    return p + word.size();
}
}  // namespace

std::string format_minutes(std::int64_t minutes) {
    if (minutes < 0) {
        minutes = 0;
    }
    char buf[64];  // two numbers of at most 19 digits and " hours " " minutes"
    char* p = buf;
    const std::int64_t hours = minutes / 60;
    const std::int64_t rest = minutes % 60;
    if (hours > 0) {
        p = put_unit(p, hours, "hour", "hours");
        if (rest == 0) {
            return std::string(buf, p);
        }
        *p++ = ' ';
    }
    p = put_unit(p, rest, "minute", "minutes");
    return std::string(buf, p);
}

}  // namespace waitroom::room
