#pragma once
// The data plane's names for Asio and Beast, shared with admin/: see waitroom/net/common.hpp.

#include "waitroom/net/common.hpp"

namespace waitroom::gateway {

using namespace waitroom::net;

}  // namespace waitroom::gateway
