# Tests of the page renderer (waitroom_pages). Included from tests/gateway/CMakeLists.txt.
waitroom_add_test(page_renderer_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/page_renderer_test.cpp
  LIBS waitroom_pages nlohmann_json::nlohmann_json
  LABELS unit)

# Not a test: renders every built-in page to HTML files for a look in a browser.
#   page_preview OUT_DIR
add_executable(page_preview ${CMAKE_CURRENT_LIST_DIR}/page_preview.cpp)
target_link_libraries(page_preview PRIVATE waitroom_pages)
