// Accept-Encoding negotiation for the answers from memory (RFC 9110 §12.5.3): q-values, `*`,
// identity refused, malformed entries, several field lines and hostile sizes.
#include "accept_encoding.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <string>
#include <string_view>

namespace waitroom::gateway {
namespace {

using pages::content_coding;

content_coding choose(std::initializer_list<std::string_view> fields, bool has_gzip = true,
                      bool has_br = true) {
    accept_encoding a;
    for (auto f : fields) {
        a.read(f);
    }
    return a.best(has_gzip, has_br);
}

const char* name(content_coding c) {
    switch (c) {
        case content_coding::gzip:
            return "gzip";
        case content_coding::br:
            return "br";
        default:
            return "identity";
    }
}

struct row {
    std::string_view header;
    content_coding expected;
};

TEST(AcceptEncoding, ChoosesByTheNegotiationTable) {
    const row table[] = {
        {"", content_coding::identity},
        {"gzip", content_coding::gzip},
        {"br", content_coding::br},
        {"gzip, br", content_coding::br},
        {"br, gzip", content_coding::br},
        {"gzip, deflate, br, zstd", content_coding::br},
        {"br;q=1, gzip;q=0.5", content_coding::br},
        {"br;q=0.5, gzip", content_coding::gzip},
        {"br;q=0.5, gzip;q=0.5", content_coding::br},
        {"GZIP", content_coding::gzip},
        {"Br", content_coding::br},
        {"x-gzip", content_coding::gzip},
        {" \tgzip ; Q=0.8 ,\t br ; q = 0.9", content_coding::gzip},  // "q = 0.9" is malformed
        {"gzip ;q=0.8, br; q=0.9 ", content_coding::br},
        {"*", content_coding::br},
        {"*;q=0", content_coding::identity},
        {"identity;q=0", content_coding::identity},
        {"identity;q=0, *;q=0", content_coding::identity},
        {"gzip;q=0", content_coding::identity},
        {"gzip;q=0, *", content_coding::br},
        {"br;q=0, *", content_coding::gzip},
        {"br;q=0, *;q=0.3", content_coding::gzip},
        {"*;q=0.5, br;q=0.2", content_coding::gzip},
        {"identity, gzip;q=0.5", content_coding::identity},
        {"identity;q=0.5, gzip;q=0.5", content_coding::gzip},
        {"identity;q=0, gzip;q=0.001", content_coding::gzip},
        {"deflate, compress", content_coding::identity},
        {"gzip;q=1.000", content_coding::gzip},
        {"gzip;q=0.000", content_coding::identity},
        {"gzip, gzip;q=0", content_coding::gzip},  // the first entry for a coding counts
        {"gzip;q=0, gzip", content_coding::identity},
    };
    for (const auto& r : table) {
        EXPECT_STREQ(name(choose({r.header})), name(r.expected)) << "Accept-Encoding: " << r.header;
    }
}

TEST(AcceptEncoding, SendsIdentityWithoutTheField) {
    EXPECT_EQ(choose({}), content_coding::identity);
}

TEST(AcceptEncoding, SkipsMalformedEntriesAndKeepsTheRest) {
    const row table[] = {
        {"gzip;q=2", content_coding::identity},       {"gzip;q=1.001", content_coding::identity},
        {"gzip;q=0.1234", content_coding::identity},  {"gzip;q=", content_coding::identity},
        {"gzip;q=-1", content_coding::identity},      {"gzip;q=.5", content_coding::identity},
        {"gzip;level=9", content_coding::identity},   {"gzip;;q=1", content_coding::identity},
        {"gz ip", content_coding::identity},          {"\"gzip\"", content_coding::identity},
        {"gzip;q=2, br", content_coding::br},         {",,, ,gzip,,", content_coding::gzip},
        {"\x01\x02\xff, gzip", content_coding::gzip}, {";q=1, br", content_coding::br},
        {"gzip;q=0.5;q=1", content_coding::identity},
    };
    for (const auto& r : table) {
        EXPECT_STREQ(name(choose({r.header})), name(r.expected)) << "Accept-Encoding: " << r.header;
    }
}

TEST(AcceptEncoding, ReadsEveryFieldLineOfTheRequest) {
    EXPECT_EQ(choose({"gzip;q=0.5", "br"}), content_coding::br);
    EXPECT_EQ(choose({"br;q=0", "*"}), content_coding::gzip);
    EXPECT_EQ(choose({"identity;q=0", ""}), content_coding::identity);
}

TEST(AcceptEncoding, OffersOnlyTheFormsThePageHas) {
    EXPECT_EQ(choose({"br"}, true, false), content_coding::identity);
    EXPECT_EQ(choose({"br, gzip;q=0.1"}, true, false), content_coding::gzip);
    EXPECT_EQ(choose({"gzip, br;q=0.1"}, false, true), content_coding::br);
    EXPECT_EQ(choose({"*"}, false, false), content_coding::identity);
}

// An 8 KB header of thousands of entries, and one a hundred times larger: each entry is read
// once, so even the large one takes well under a second, and the answer is still right.
TEST(AcceptEncoding, ReadsAHostileHeaderOfThousandsOfEntriesInLinearTime) {
    std::string small;
    while (small.size() < 8 * 1024 - 8) {
        small += "a;q=0.5,";
    }
    EXPECT_EQ(choose({small + "br"}), content_coding::br);
    std::string commas(8 * 1024, ',');
    EXPECT_EQ(choose({commas + "gzip" + commas}), content_coding::gzip);
    std::string semicolons(8 * 1024, ';');
    EXPECT_EQ(choose({"gzip" + semicolons + ", br"}), content_coding::br);

    std::string large;
    for (int i = 0; i < 100; ++i) {
        large += small;
    }
    large += "gzip";
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(choose({large}), content_coding::gzip);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

}  // namespace
}  // namespace waitroom::gateway
