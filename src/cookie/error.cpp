#include "waitroom/cookie/error.hpp"

namespace waitroom::cookie {
namespace {

class category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "waitroom.cookie"; }

    std::string message(int code) const override {
        switch (static_cast<errc>(code)) {
            case errc::malformed:
                return "cookie is malformed";
            case errc::bad_auth:
                return "cookie failed authentication (forged, altered or truncated)";
            case errc::unknown_key:
                return "cookie was sealed with a key id that is not in the key ring";
            case errc::wrong_room:
                return "cookie was issued for another room";
            case errc::expired:
                return "cookie has expired";
            case errc::crypto_failure:
                return "cryptographic library failure";
        }
        return "unknown cookie error " + std::to_string(code);
    }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace waitroom::cookie
