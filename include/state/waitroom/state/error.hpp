#pragma once
// Errors of the state store and its sync task, as std::error_code (no exceptions on the request
// path or in completion handlers).

#include <system_error>

namespace waitroom::state {

enum class errc {
    busy = 1,     // a sync is already in flight; this run was skipped
    unavailable,  // the store cannot be reached
    timeout,      // the store did not answer in time
    protocol,     // the store answered something unexpected
    no_engine,    // the sync task has no rooms yet
    lost,         // the connection went with the call sent: it may have been applied
    room_failed,  // the store's script failed for one room alone (a key of the wrong type,
                  // Redis out of memory): that room's report may or may not have been applied
};

const std::error_category& category();
std::error_code make_error_code(errc e);

}  // namespace waitroom::state

template <>
struct std::is_error_code_enum<waitroom::state::errc> : std::true_type {};
