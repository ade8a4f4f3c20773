// The compressed forms of a rendered page: each decodes (zlib inflate, BrotliDecoderDecompress)
// to the page's exact bytes, a body too small to gain has none, and the render cache keeps the
// forms beside the page it rendered.
#include "waitroom/pages/page_encoding.hpp"

#include <gtest/gtest.h>

#include <string>

#include "support/decompress.hpp"
#include "waitroom/pages/page_renderer.hpp"

namespace waitroom::pages {
namespace {

using test::gunzip;
using test::unbrotli;

config::config one_room() {
    config::config cfg;
    config::room r;
    r.id = "shop";
    r.name = "Shop <checkout> & \"more\"";
    r.total_active_users = 10;
    r.new_users_per_minute = 10;
    cfg.rooms.push_back(r);
    return cfg;
}

room::page_model queued() {
    room::page_model m;
    m.room_name = "Shop checkout";
    m.in_waiting_room = true;
    m.queue_position = 42;
    m.wait_time_known = true;
    m.wait_time = 5;
    m.refresh_interval_seconds = 20;
    m.queueing_method = "fifo";
    return m;
}

void expect_forms_decode_to_identity(const rendered_page& page) {
    ASSERT_TRUE(page.has(content_coding::gzip));
    ASSERT_TRUE(page.has(content_coding::br));
    EXPECT_LT(page.gzip.size(), page.identity.size());
    EXPECT_LT(page.br.size(), page.identity.size());
    EXPECT_EQ(gunzip(page.gzip), page.identity);
    EXPECT_EQ(unbrotli(page.br, page.identity.size()), page.identity);
}

TEST(PageEncoding, EveryFormOfTheQueuePageDecodesToThePageItself) {
    const auto cfg = one_room();
    const auto loaded = page_templates::load(cfg);
    ASSERT_TRUE(loaded.ok());
    page_renderer renderer(loaded.templates);
    auto m = queued();
    const auto page = renderer.queue_page("shop", "", page_key{1, 1}, m);
    EXPECT_GT(page->identity.size(), 10'000u);
    expect_forms_decode_to_identity(*page);

    m.challenge_required = true;
    m.challenge_difficulty = 14;
    const auto challenged = renderer.queue_page("shop", "", page_key{1, 2}, m);
    expect_forms_decode_to_identity(*challenged);
    EXPECT_NE(challenged->identity.find("data-challenge=\"waitroom_seed\""), std::string::npos);
}

TEST(PageEncoding, EveryFormOfTheRejectPageAndTheJsonDecodesToItsText) {
    const auto cfg = one_room();
    const auto loaded = page_templates::load(cfg);
    ASSERT_TRUE(loaded.ok());
    page_renderer renderer(loaded.templates);
    expect_forms_decode_to_identity(*renderer.reject_page("shop", page_key{1, 1}, queued()));
    const auto json = renderer.json("shop", page_key{1, 1}, queued());
    EXPECT_EQ(gunzip(json->gzip), json->identity);
    EXPECT_EQ(unbrotli(json->br, json->identity.size()), json->identity);
}

TEST(PageEncoding, FormsShareThePagesOwnershipWithoutACopy) {
    const auto page = rendered_page::compress(std::string(5000, 'x'));
    const auto gz = form_of(page, content_coding::gzip);
    const auto br = form_of(page, content_coding::br);
    const auto plain = form_of(page, content_coding::identity);
    EXPECT_EQ(gz.get(), &page->gzip);
    EXPECT_EQ(br.get(), &page->br);
    EXPECT_EQ(plain.get(), &page->identity);
    EXPECT_EQ(page.use_count(), 4);
}

TEST(PageEncoding, ABodyTooSmallToGainIsKeptOnlyAsItIs) {
    const auto page = rendered_page::compress("{}");
    EXPECT_FALSE(page->has(content_coding::gzip));
    EXPECT_FALSE(page->has(content_coding::br));
    EXPECT_EQ(*form_of(page, content_coding::br), "{}");
    EXPECT_EQ(*form_of(page, content_coding::gzip), "{}");
    const auto empty = rendered_page::compress("");
    EXPECT_EQ(*form_of(empty, content_coding::gzip), "");
}

TEST(PageEncoding, CompressesArbitraryBytesLosslessly) {
    std::string bytes;
    for (int i = 0; i < 70'000; ++i) {
        bytes.push_back(static_cast<char>((i * 7919) ^ (i >> 3)));
    }
    EXPECT_EQ(gunzip(gzip_compress(bytes)), bytes);
    EXPECT_EQ(unbrotli(brotli_compress(bytes), bytes.size()), bytes);
}

}  // namespace
}  // namespace waitroom::pages
