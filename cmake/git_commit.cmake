# Run at every build (cmake -P): writes OUT, a header defining WAITROOM_COMMIT as the checkout's
# commit ("8c3d1ca1b2c3", "-dirty" when tracked files differ from it), or COMMIT when given
# (a package built from a tarball), or "unknown" outside a git checkout. OUT is rewritten only
# when its text changes, so an unchanged commit recompiles nothing.
if(NOT COMMIT)
  execute_process(COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND COMMIT)
    execute_process(COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
      OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      string(APPEND COMMIT "-dirty")
    endif()
  else()
    set(COMMIT "unknown")
  endif()
endif()
set(text "// Generated at build time by cmake/git_commit.cmake: do not edit.\n#pragma once\n#define WAITROOM_COMMIT \"${COMMIT}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
