// libFuzzer entry point for the access log's JSON line: any bytes as the request target and the
// Host header (split at the first NUL) must give exactly one line that a strict JSON parser
// accepts, with both fields present, at most max_field_bytes of each logged (6 bytes per input
// byte at the most, plus the cut mark). Built by tests/fuzz/run.sh with clang; also replayed by
// access_log_fuzz_replay under g++.

#include <spdlog/logger.h>
#include <spdlog/sinks/ostream_sink.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "waitroom/util/access_log.hpp"

namespace {

struct capture {
    std::ostringstream out;
    std::shared_ptr<spdlog::logger> logger = [this] {
        auto l = std::make_shared<spdlog::logger>(
            "access-fuzz", std::make_shared<spdlog::sinks::ostream_sink_st>(out));
        l->set_pattern("%v");
        return l;
    }();
    waitroom::util::access_log log{logger};
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using waitroom::util::access_log;
    static capture c;
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const std::size_t nul = bytes.find('\0');
    waitroom::util::access_record r;
    r.method = "GET";
    r.target = bytes.substr(0, nul);
    r.host = nul == std::string_view::npos ? std::string_view{} : bytes.substr(nul + 1);

    c.out.str({});
    c.log.write(r);
    c.logger->flush();
    const std::string line = c.out.str();
    if (line.empty() || line.back() != '\n' || std::count(line.begin(), line.end(), '\n') != 1 ||
        std::count(line.begin(), line.end(), '\r') != 0) {
        std::abort();
    }
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("target") || !j.contains("host") ||
        !j.at("target").is_string() || !j.at("host").is_string()) {
        std::abort();
    }
    const std::size_t bound = 6 * (std::min(r.target.size(), access_log::max_field_bytes) +
                                   std::min(r.host.size(), access_log::max_field_bytes)) +
                              512;
    if (line.size() > bound) {
        std::abort();
    }
    return 0;
}
