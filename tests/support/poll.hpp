#pragma once
// Waiting for something to happen in a test: poll with a deadline, never sleep a guess.

#include <chrono>
#include <functional>
#include <thread>

namespace waitroom::test {

// Calls `step` every `period` until it returns true or `deadline` passes.
inline bool poll_until(std::chrono::milliseconds deadline, std::chrono::milliseconds period,
                       const std::function<bool()>& step) {
    auto end = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < end) {
        if (step()) {
            return true;
        }
        std::this_thread::sleep_for(period);
    }
    return false;
}

inline bool poll_until(std::chrono::milliseconds deadline, const std::function<bool()>& step) {
    return poll_until(deadline, std::chrono::milliseconds{20}, step);
}

}  // namespace waitroom::test
