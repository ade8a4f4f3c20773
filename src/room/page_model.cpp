#include "waitroom/room/page_model.hpp"

namespace waitroom::room {

namespace {
void append_unit(std::string& out, std::int64_t n, const char* one, const char* many) {
    out += std::to_string(n);
    out += ' ';
    out += n == 1 ? one : many;
}
}  // namespace

std::string format_minutes(std::int64_t minutes) {
    if (minutes < 0) {
        minutes = 0;
    }
    std::string out;
    std::int64_t hours = minutes / 60;
    std::int64_t rest = minutes % 60;
    if (hours > 0) {
        append_unit(out, hours, "hour", "hours");
        if (rest == 0) {
            return out;
        }
        out += ' ';
    }
    append_unit(out, rest, "minute", "minutes");
    return out;
}

}  // namespace waitroom::room
