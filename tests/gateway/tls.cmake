# The certificates of TLS listeners: the SNI table, and loading certificate files.
# Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(gateway_tls_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/sni_table_test.cpp
          ${CMAKE_CURRENT_LIST_DIR}/listener_tls_test.cpp
  LIBS waitroom_gateway waitroom_test_certificates
  LABELS unit)
target_include_directories(gateway_tls_test PRIVATE ${PROJECT_SOURCE_DIR}/src/gateway)
