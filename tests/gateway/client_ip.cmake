# The client address behind proxies: X-Forwarded-For selection and the PROXY protocol parser
# (sans-io units of waitroom_gateway). Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(gateway_client_ip_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_ip_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/proxy_protocol_test.cpp
  LIBS waitroom_gateway
  LABELS unit)
target_include_directories(gateway_client_ip_test PRIVATE ${PROJECT_SOURCE_DIR}/src/gateway)
