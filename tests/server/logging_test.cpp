#include "waitroom/server/logging.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

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

TEST(AccessLog, WritesOneJsonLinePerRequestWithEscapedFields) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    auto logger = std::make_shared<spdlog::logger>("access-test", sink);
    logger->set_pattern("%v");
    util::access_log log(logger);

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
    r.unix_ms = 1'800'000'000'000;
    log.write(r);
    logger->flush();

    EXPECT_EQ(out.str(),
              "{\"ts\":1800000000000,\"remote\":\"127.0.0.1\",\"method\":\"GET\","
              "\"target\":\"/a\\\"b\\\\c\\u0001\",\"host\":\"shop.example.com\",\"status\":200,"
              "\"bytes\":13,\"us\":250,\"room\":\"shop\",\"decision\":\"admit\"}\n");
}

}  // namespace
}  // namespace waitroom::server
