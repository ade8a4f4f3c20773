#pragma once
// The operator commands of the cookie codec: `waitroomd keygen` and `waitroomd cookie`.

#include <iosfwd>
#include <string_view>

#include "waitroom/config/config.hpp"
#include "waitroom/util/clock.hpp"

namespace waitroom::cookie {

// Prints a fresh random 256-bit key, base64-encoded, and a newline. Returns the exit code.
int keygen_command(std::ostream& out);

// Decrypts `value` for room `room_id` with the config's key ring and prints its fields as JSON
// to `out`; on any failure prints the error to `err` and returns 1. No expiry is applied
// (operators debug old cookies); the JSON says whether the room's session_duration would
// expire it. The key file is never created by this command.
int decode_command(const config::config& cfg, std::string_view room_id, std::string_view value,
                   std::ostream& out, std::ostream& err);

// Same, judging expiry at `now` (tests).
int decode_command(const config::config& cfg, std::string_view room_id, std::string_view value,
                   std::ostream& out, std::ostream& err, util::sys_time now);

}  // namespace waitroom::cookie
