#pragma once
// The operator commands of the cookie codec: `waitroomd keygen` and `waitroomd cookie`.

#include <iosfwd>
#include <string_view>

#include "waitroom/config/config.hpp"

namespace waitroom::cookie {

// Prints a fresh random 256-bit key, base64-encoded, and a newline. Returns the exit code.
int keygen_command(std::ostream& out);

// Decrypts `value` for room `room_id` with the config's key ring and prints its fields as JSON
// to `out`; on any failure prints the error to `err` and returns 1.
int decode_command(const config::config& cfg, std::string_view room_id, std::string_view value,
                   std::ostream& out, std::ostream& err);

}  // namespace waitroom::cookie
