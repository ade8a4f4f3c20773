#include "waitroom/server/logging.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "waitroom/util/access_log.hpp"

namespace waitroom::server {
namespace {

TEST(Logging, ParsesEveryConfiguredLevelName) {
    EXPECT_EQ(parse_level("trace"), spdlog::level::trace);
    EXPECT_EQ(parse_level("debug"), spdlog::level::debug);
    EXPECT_EQ(parse_level("info"), spdlog::level::info);
    EXPECT_EQ(parse_level("warn"), spdlog::level::warn);
    EXPECT_EQ(parse_level("error"), spdlog::level::err);
    EXPECT_EQ(parse_level("critical"), spdlog::level::critical);
    EXPECT_EQ(parse_level("off"), spdlog::level::off);
    EXPECT_EQ(parse_level("verbose"), std::nullopt);
}

TEST(Logging, AccessLogOffWhenNoPathIsConfigured) {
    EXPECT_EQ(open_access_log(""), nullptr);
}

// The line the access log writes for `r`, through an in-memory logger.
std::string logged_line(const util::access_record& r) {
    std::ostringstream out;
    auto logger = std::make_shared<spdlog::logger>(
        "access-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
    logger->set_pattern("%v");
    util::access_log(logger).write(r);
    logger->flush();
    return out.str();
}

TEST(AccessLog, WritesOneJsonLinePerRequestWithEscapedFields) {
    util::access_record r;
    r.remote = "127.0.0.1";
    r.method = "GET";
    r.target = "/a\"b\\c\x01";
    r.host = "shop.example.com";
    r.status = 200;
    r.bytes_sent = 13;
    r.duration = std::chrono::microseconds{250};
    r.room = "shop";
    r.decision = "admit";
    r.protocol = "HTTP/2";
    r.unix_ms = 1'800'000'000'000;
    EXPECT_EQ(logged_line(r),
              "{\"ts\":1800000000000,\"remote\":\"127.0.0.1\",\"method\":\"GET\","
              "\"target\":\"/a\\\"b\\\\c\\u0001\",\"host\":\"shop.example.com\",\"status\":200,"
              "\"bytes\":13,\"us\":250,\"room\":\"shop\",\"decision\":\"admit\","
              "\"protocol\":\"HTTP/2\"}\n");
}

// Bytes that are not UTF-8 (a hostile Host or target) become U+FFFD, one per byte, so the line
// stays valid JSON; well-formed UTF-8 passes unchanged.
TEST(AccessLog, WritesBytesThatAreNotUtf8AsReplacementCharacters) {
    util::access_record r;
    r.method = "GET";
    // A stray continuation, an overlong '/', a surrogate, a code point past U+10FFFF, a cut
    // sequence at the end; then good 2-, 3- and 4-byte sequences.
    r.host =
        "a\x80"
        "b\xc0\xaf"
        "c\xed\xa0\x80"
        "d\xf4\x90\x80\x80"
        "e\xe2\x82";
    r.target = "/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80";
    const std::string line = logged_line(r);
    const std::string fffd = "\xef\xbf\xbd";
    EXPECT_NE(line.find("\"host\":\"a" + fffd + "b" + fffd + fffd + "c" + fffd + fffd + fffd + "d" +
                        fffd + fffd + fffd + fffd + "e" + fffd + fffd + "\""),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("\"target\":\"/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80\""),
              std::string::npos)
        << line;
    // A strict parser takes the line (nlohmann refuses invalid UTF-8).
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("target"), "/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80");
}

// C1 controls (U+0080..U+009F) and the line separators U+2028/U+2029 are escaped like the C0
// ones, so no terminal acts on them and no splitlines() cuts the line; a long field is cut at
// max_field_bytes and marked with "…", a sequence cut there becoming U+FFFD.
TEST(AccessLog, EscapesC1ControlsAndLineSeparatorsAndCutsLongFields) {
    util::access_record r;
    r.host =
        "a\xc2\x85"
        "b\xc2\x9b"
        "c\xe2\x80\xa8"
        "d\xe2\x80\xa9"
        "e\xc2\xa0";
    std::string target(util::access_log::max_field_bytes - 1, 'x');
    target += "\xc3\xa9tail";  // the cut falls inside "é"
    r.target = target;
    const std::string line = logged_line(r);
    EXPECT_NE(line.find("\"host\":\"a\\u0085b\\u009bc\\u2028d\\u2029e\xc2\xa0\""),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("\"target\":\"" + std::string(util::access_log::max_field_bytes - 1, 'x') +
                        "\xef\xbf\xbd\xe2\x80\xa6\""),
              std::string::npos)
        << line.substr(0, 80);
    EXPECT_EQ(line.find("tail"), std::string::npos);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("host"),
              "a\xc2\x85"
              "b\xc2\x9b"
              "c\xe2\x80\xa8"
              "d\xe2\x80\xa9"
              "e\xc2\xa0");
}

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Polls until `path` holds `needle`: the access log is written by its own thread.
bool file_gets(const std::filesystem::path& path, const std::string& needle) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
    while (read_file(path).find(needle) == std::string::npos) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return true;
}

util::access_record record(std::string_view target) {
    util::access_record r;
    r.method = "GET";
    r.target = target;
    r.status = 200;
    return r;
}

// open_access_log registers the process-wide "access" logger: one test opens it.
TEST(AccessLog, ReopenSendsLaterLinesToANewFileAtThePathAndKeepsEarlierOnesInTheRenamedOne) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("waitroom-logging-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto path = dir / "access.log";
    const auto rotated = dir / "access.log.1";
    auto log = open_access_log(path.string());
    ASSERT_NE(log, nullptr);

    log->write(record("/before"));
    ASSERT_TRUE(file_gets(path, "/before"));
    std::filesystem::rename(path, rotated);
    EXPECT_TRUE(reopen_access_log(*log));
    log->write(record("/after"));
    ASSERT_TRUE(file_gets(path, "/after"));

    EXPECT_EQ(read_file(path).find("/before"), std::string::npos);
    const std::string old = read_file(rotated);
    EXPECT_NE(old.find("/before"), std::string::npos) << old;
    EXPECT_EQ(old.find("/after"), std::string::npos) << old;
    spdlog::drop("access");
    log.reset();
    std::filesystem::remove_all(dir);
}

TEST(AccessLog, ReopenHasNothingToDoForALogThatWritesToNoFile) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    util::access_log log(std::make_shared<spdlog::logger>("access-stream", sink));
    EXPECT_FALSE(reopen_access_log(log));
}

}  // namespace
}  // namespace waitroom::server
