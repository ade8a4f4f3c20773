#pragma once
// The time source everything reads. Injected so that room/ and cookie/ logic runs under a fake
// clock in tests and under virtual time in the simulator, and so that integration tests can
// compress time (config `testing.time_scale`).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace waitroom::util {

using sys_time = std::chrono::system_clock::time_point;

class clock {
public:
    virtual ~clock() = default;
    // Wall-clock time as the product sees it (possibly scaled).
    virtual sys_time now() const = 0;
};

// The real wall clock.
class system_clock final : public clock {
public:
    sys_time now() const override { return std::chrono::system_clock::now(); }
};

// Wall time that runs `scale` times faster than real time from the moment it is built.
// Test-only: lets integration tests cross session durations and minute windows in seconds.
class scaled_clock final : public clock {
public:
    explicit scaled_clock(double scale);
    sys_time now() const override;

private:
    double scale_;
    sys_time start_wall_;
    std::chrono::steady_clock::time_point start_steady_;
};

// A clock moved by hand, for unit tests and the simulator.
class manual_clock final : public clock {
public:
    explicit manual_clock(sys_time start = sys_time{std::chrono::seconds{1'800'000'000}})
        : now_ns_(start.time_since_epoch().count()) {}
    sys_time now() const override {
        return sys_time{sys_time::duration{now_ns_.load(std::memory_order_relaxed)}};
    }
    void set(sys_time t) { now_ns_.store(t.time_since_epoch().count(), std::memory_order_relaxed); }
    void advance(std::chrono::nanoseconds d) {
        now_ns_.fetch_add(std::chrono::duration_cast<sys_time::duration>(d).count(),
                          std::memory_order_relaxed);
    }

private:
    std::atomic<sys_time::rep> now_ns_;
};

// Milliseconds since the Unix epoch: the unit of time stored in cookies and counters.
inline std::int64_t unix_ms(sys_time t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

// "2026-12-01T10:00:00Z" for a unix-ms instant (whole seconds, UTC).
std::string iso8601_utc(std::int64_t unix_ms);

}  // namespace waitroom::util
