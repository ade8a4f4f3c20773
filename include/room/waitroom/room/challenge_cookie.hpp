#pragma once
// The name of the cookie that carries a challenged visitor's seed (challenge.hpp) to the queue
// page's script: `waitroom_seed`, or `waitroom_seed_<suffix>`. Not HttpOnly, since the script
// reads it; it is never read by the gateway, which takes the seed from the admission cookie
// itself, so a value written by anyone else only spoils that visitor's own solution. Its name
// never equals an admission cookie's, whatever the suffixes. Here, beside the challenge, so that
// the pages that name it and the cookie module that sets it share one spelling.

#include <string>
#include <string_view>

namespace waitroom::room {

inline constexpr std::string_view base_challenge_cookie_name = "waitroom_seed";

inline std::string challenge_cookie_name(std::string_view cookie_suffix) {
    std::string name(base_challenge_cookie_name);
    if (!cookie_suffix.empty()) {
        name.push_back('_');
        name.append(cookie_suffix);
    }
    return name;
}

}  // namespace waitroom::room
