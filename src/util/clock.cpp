#include "waitroom/util/clock.hpp"

namespace waitroom::util {

scaled_clock::scaled_clock(double scale)
    : scale_(scale),
      start_wall_(std::chrono::system_clock::now()),
      start_steady_(std::chrono::steady_clock::now()) {}

sys_time scaled_clock::now() const {
    auto real = std::chrono::steady_clock::now() - start_steady_;
    auto scaled = std::chrono::duration_cast<sys_time::duration>(
        std::chrono::duration<double, std::nano>(
            std::chrono::duration<double, std::nano>(real).count() * scale_));
    return start_wall_ + scaled;
}

}  // namespace waitroom::util
