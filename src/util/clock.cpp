#include "waitroom/util/clock.hpp"

#include <ctime>

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

std::string iso8601_utc(std::int64_t unix_ms) {
    std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return std::string(buf, n);
}

}  // namespace waitroom::util
