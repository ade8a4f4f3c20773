#include "waitroom/state/error.hpp"

#include <string>

namespace waitroom::state {

namespace {
class category_impl final : public std::error_category {
  public:
    const char* name() const noexcept override { return "waitroom.state"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::busy:
                return "a sync is already in flight";
            case errc::unavailable:
                return "state store unavailable";
            case errc::timeout:
                return "state store did not answer in time";
            case errc::protocol:
                return "unexpected answer from the state store";
            case errc::no_engine:
                return "no rooms configured yet";
            case errc::lost:
                return "state store connection lost with the call sent (outcome unknown)";
            case errc::room_failed:
                return "the state store failed this room's update (its script raised an error)";
        }
        return "unknown state store error";
    }
};
}  // namespace

const std::error_category& category() {
    static const category_impl c;
    return c;
}

std::error_code make_error_code(errc e) {
    return {static_cast<int>(e), category()};
}

}  // namespace waitroom::state
