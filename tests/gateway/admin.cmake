# Tests of the admin listener and the metrics registry (waitroom_admin, waitroom_metrics), and the
# dashboard's browser test. Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(metrics_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cpp
  LIBS waitroom_metrics
  LABELS unit)

waitroom_add_test(admin_server_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/admin_server_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/test_client.cpp
  LIBS waitroom_admin nlohmann_json::nlohmann_json
  LABELS unit)

# Not a test by itself: the admin listener with a fake, animated backend, for the browser test.
#   admin_dashboard_server [--token TOKEN]   prints "listening PORT", runs until stdin closes
add_executable(admin_dashboard_server ${CMAKE_CURRENT_LIST_DIR}/admin_dashboard_server.cpp)
target_link_libraries(admin_dashboard_server PRIVATE waitroom_admin)
target_include_directories(admin_dashboard_server PRIVATE ${PROJECT_SOURCE_DIR}/tests)

find_program(WAITROOM_NODE node)
if(WAITROOM_NODE AND EXISTS /usr/bin/chromium)
  add_test(NAME admin_dashboard_browser
    COMMAND ${WAITROOM_NODE} ${PROJECT_SOURCE_DIR}/tests/browser/dashboard.test.mjs
            $<TARGET_FILE:admin_dashboard_server> ${CMAKE_BINARY_DIR}/browser-artifacts)
  set_tests_properties(admin_dashboard_browser PROPERTIES LABELS browser TIMEOUT 120)
endif()
