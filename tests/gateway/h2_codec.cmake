# The HTTP/2 server codec (sans-io unit of waitroom_gateway), driven by a real nghttp2 client
# session and by hand-built frames. Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(gateway_h2_codec_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/h2_codec_test.cpp
  LIBS waitroom_gateway PkgConfig::NGHTTP2
  LABELS unit)
target_include_directories(gateway_h2_codec_test PRIVATE ${PROJECT_SOURCE_DIR}/src/gateway)
