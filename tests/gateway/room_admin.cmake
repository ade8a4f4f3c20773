# The admin backend over the room runtime and the state store (run-time switches, issue 7).
# Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(room_admin_backend_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/room_admin_backend_test.cpp
  LIBS waitroom_gateway
  LABELS unit)
