# Tests of the reverse-proxy data plane (waitroom_gateway) against the in-process test origin.
# Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(gateway_proxy_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/forward_headers_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/outgoing_message_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/edge_read_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/message_head_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/client_slots_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/worker_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/origin_balancing_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/request_filter_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/session_phase_test.cpp
          ${PROJECT_SOURCE_DIR}/tests/support/test_client.cpp
  LIBS waitroom_gateway waitroom_test_origin waitroom_test_certificates
  LABELS unit)
target_include_directories(gateway_proxy_test PRIVATE ${PROJECT_SOURCE_DIR}/src/gateway)
