# Accept-Encoding negotiation for the answers from memory (a sans-io unit of waitroom_gateway).
# Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(gateway_accept_encoding_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/accept_encoding_test.cpp
  LIBS waitroom_gateway
  LABELS unit)
target_include_directories(gateway_accept_encoding_test PRIVATE ${PROJECT_SOURCE_DIR}/src/gateway)
