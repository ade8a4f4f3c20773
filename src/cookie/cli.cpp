#include "waitroom/cookie/cli.hpp"

#include <ctime>
#include <exception>
#include <ostream>

#include <nlohmann/json.hpp>

#include "waitroom/cookie/codec.hpp"
#include "waitroom/cookie/key_ring.hpp"
#include "waitroom/room/engine.hpp"

namespace waitroom::cookie {
namespace {

// Unix ms as "2026-01-02T03:04:05.678Z", for people reading the output; "" for 0.
std::string utc_text(std::int64_t ms) {
    if (ms == 0) {
        return "";
    }
    std::int64_t secs = ms / 1000;
    std::int64_t frac = ms % 1000;
    if (frac < 0) {
        frac += 1000;
        secs -= 1;
    }
    std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    if (::gmtime_r(&t, &tm) == nullptr) {
        return "";
    }
    char buf[64];
    std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    if (n == 0) {
        return "";
    }
    std::string out(buf, n);
    char ms_buf[8];
    std::snprintf(ms_buf, sizeof ms_buf, ".%03dZ", static_cast<int>(frac));
    return out + ms_buf;
}

const char* code_name(const std::error_code& ec) {
    if (ec.category() != error_category()) {
        return "error";
    }
    switch (static_cast<errc>(ec.value())) {
        case errc::malformed:
            return "malformed";
        case errc::bad_auth:
            return "bad_auth";
        case errc::unknown_key:
            return "unknown_key";
        case errc::wrong_room:
            return "wrong_room";
        case errc::expired:
            return "expired";
        case errc::crypto_failure:
            return "crypto_failure";
    }
    return "error";
}

// The engine's bits of payload::flags, by name: an operator reading "flags": 3076 should not
// need the source to see a challenged cookie asking 14 bits with a 12 s Refresh.
nlohmann::json flags_text(const payload& p) {
    namespace vf = room::visitor_flags;
    nlohmann::json j = {
        {"uncounted", (p.flags & vf::uncounted) != 0},
        {"flagged", (p.flags & vf::flagged) != 0},
        {"challenged", room::challenged(p)},
        {"refresh_seconds", p.flags >> vf::refresh_shift},
    };
    if (room::challenged(p)) {
        j["challenge_difficulty"] = room::challenge_bits(p);
    }
    return j;
}

}  // namespace

int keygen_command(std::ostream& out) {
    try {
        out << generate_key_base64() << '\n';
        return 0;
    } catch (const std::exception&) {
        out.setstate(std::ios::failbit);
        return 1;
    }
}

int decode_command(const config::config& cfg, std::string_view room_id, std::string_view value,
                   std::ostream& out, std::ostream& err) {
    return decode_command(cfg, room_id, value, out, err, std::chrono::system_clock::now());
}

int decode_command(const config::config& cfg, std::string_view room_id, std::string_view value,
                   std::ostream& out, std::ostream& err, util::sys_time now) {
    const config::room* room = nullptr;
    for (const auto& r : cfg.rooms) {
        if (r.id == room_id) {
            room = &r;
            break;
        }
    }
    if (room == nullptr) {
        err << "error: no room with id '" << room_id << "' in the configuration\n";
        return 1;
    }
    auto loaded = load_key_ring(cfg.cookie, key_ring_options{.create_key_file = false});
    if (!loaded.ok()) {
        err << "error: " << loaded.error << '\n';
        return 1;
    }
    // Operators paste values from browser tools, sometimes with spaces or quotes around them.
    while (!value.empty() && (value.front() == ' ' || value.front() == '"')) {
        value.remove_prefix(1);
    }
    while (!value.empty() && (value.back() == ' ' || value.back() == '"' || value.back() == '\n')) {
        value.remove_suffix(1);
    }
    result<payload> r = open(*loaded.ring, value, room->id);
    if (!r) {
        err << "error: " << code_name(r.error()) << ": " << r.error().message() << '\n';
        return 1;
    }
    const payload& p = *r;
    const bool expired = static_cast<bool>(check_age(p, now, room->session_duration));
    nlohmann::json j = {
        {"room", p.room},
        {"key_id", std::string(key_id_of(value))},
        {"version", p.version},
        {"bucket", p.bucket},
        {"bucket_utc", utc_text(p.bucket)},
        {"accepted_at", p.accepted_at},
        {"accepted_at_utc", utc_text(p.accepted_at)},
        {"last_check_in", p.last_check_in},
        {"last_check_in_utc", utc_text(p.last_check_in)},
        {"ticket", p.ticket},
        {"event_id", p.event_id},
        {"flags", p.flags},
        {"flags_decoded", flags_text(p)},
        {"flood_since", p.flood_since},
        {"flood_count", p.flood_count},
        {"network", p.network},
        {"estimate_shown_at", p.estimate_shown_at},
        {"estimate_shown_at_utc", utc_text(p.estimate_shown_at)},
        {"estimate_seconds", p.estimate_seconds},
        {"admitted", p.accepted_at != 0},
        {"session_duration_ms", room->session_duration.count()},
        {"expired", expired},
    };
    out << j.dump(2) << '\n';
    return 0;
}

}  // namespace waitroom::cookie
