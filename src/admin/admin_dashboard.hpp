#pragma once
// The live dashboard page (src/gateway/dashboard.html), embedded at build time by admin.cmake.

#include <string_view>

namespace waitroom::admin {

extern const std::string_view admin_dashboard_html;

}  // namespace waitroom::admin
