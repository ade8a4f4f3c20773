// libFuzzer entry point for the config loader: any text, loaded as waitroomd loads its YAML
// file, gives either a config or problems that name their place, never a throw or a crash.
// Built by tests/fuzz/run.sh with clang; also replayed by config_load_fuzz_replay under g++.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "waitroom/config/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace waitroom::config;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // Relative paths (templates, key files) resolve in a folder that holds none of them.
    const load_result r = load_string(text, "fuzz.yaml", "/nonexistent-fuzz-dir");
    if (r.ok() != r.problems.empty()) {
        std::abort();
    }
    for (const problem& p : r.problems) {
        if (p.file != "fuzz.yaml" || p.line < 0 || p.column < 0 || p.message.empty()) {
            std::abort();
        }
    }
    (void)format_problems(r.problems);
    return 0;
}
