# Run at every build (cmake -P): writes OUT, a source defining waitroom::build_commit as the
# checkout's commit ("8c3d1ca42c78", "-dirty" when tracked files differ from it), or COMMIT when
# given (a build without git, e.g. the Dockerfile's), or "unknown" outside a git checkout. OUT is
# rewritten only when its text changes, so an unchanged commit recompiles nothing; when git
# cannot answer (no git, or a checkout owned by another user), an OUT already written is kept.
if(COMMIT)
  if(NOT COMMIT MATCHES "^[0-9A-Za-z._+-]+$")
    message(FATAL_ERROR "WAITROOM_GIT_COMMIT '${COMMIT}': only letters, digits and ._+- please")
  endif()
else()
  execute_process(COMMAND git --no-optional-locks -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE rc ERROR_VARIABLE why)
  if(rc EQUAL 0 AND COMMIT)
    execute_process(
      COMMAND git --no-optional-locks -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
      OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      string(APPEND COMMIT "-dirty")
    endif()
  elseif(EXISTS "${OUT}")
    return()
  else()
    if(EXISTS "${SOURCE_DIR}/.git")
      message(STATUS "waitroomd --version: git cannot name the commit (${why})")
    endif()
    set(COMMIT "unknown")
  endif()
endif()
set(text "// Generated at build time by cmake/git_commit.cmake: do not edit.
namespace waitroom {
extern const char build_commit[];
const char build_commit[] = \"${COMMIT}\";
}  // namespace waitroom
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
