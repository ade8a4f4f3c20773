#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cookie/test_support.hpp"
#include "waitroom/cookie/codec.hpp"

namespace waitroom::cookie {
namespace {

using namespace std::chrono_literals;
using test::make_key;
using test::ring_of;

const util::sys_time now_tp{std::chrono::milliseconds{1'800'000'000'000}};
const std::int64_t now_ms = util::unix_ms(now_tp);

payload admitted_visitor() {
    payload p;
    p.room = "shop";
    p.bucket = now_ms - 240'000;
    p.accepted_at = now_ms - 120'000;
    p.last_check_in = now_ms - 5'000;
    p.ticket = 0x0123456789ABCDEFull;
    p.event_id = 7;
    p.flags = 3;
    return p;
}

std::string seal(const key_ring& ring, const payload& p) {
    auto r = encode(ring, p);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.value();
}

TEST(CookieCodec, RoundTripsEveryField) {
    auto ring = ring_of({make_key("k1", 1)});
    std::vector<payload> cases;
    cases.push_back(admitted_visitor());
    payload waiting = admitted_visitor();
    waiting.accepted_at = 0;
    waiting.event_id = 0;
    waiting.flags = 0;
    cases.push_back(waiting);
    payload extremes;
    extremes.room = "r";
    extremes.bucket = std::numeric_limits<std::int64_t>::max();
    extremes.accepted_at = std::numeric_limits<std::int64_t>::min();
    extremes.last_check_in = std::numeric_limits<std::int64_t>::min();
    extremes.ticket = std::numeric_limits<std::uint64_t>::max();
    extremes.event_id = std::numeric_limits<std::uint32_t>::max();
    extremes.flags = std::numeric_limits<std::uint32_t>::max();
    extremes.flood_since = std::numeric_limits<std::int64_t>::max();
    extremes.flood_count = std::numeric_limits<std::uint32_t>::max();
    extremes.network = std::numeric_limits<std::uint32_t>::max();
    extremes.estimate_shown_at = std::numeric_limits<std::int64_t>::max();
    extremes.estimate_seconds = std::numeric_limits<std::uint32_t>::max();
    cases.push_back(extremes);
    payload estimated = waiting;
    estimated.estimate_shown_at = waiting.bucket + 1'234;
    estimated.estimate_seconds = 300;
    cases.push_back(estimated);
    payload estimated_zero = waiting;  // an estimate of 0 s is an estimate
    estimated_zero.estimate_shown_at = -7;
    cases.push_back(estimated_zero);
    payload watched = waiting;
    watched.flood_since = now_ms - 30'000;
    watched.flood_count = 14;
    watched.network = 0x8000'0001u;
    cases.push_back(watched);
    payload negative = admitted_visitor();
    negative.bucket = -1;
    negative.accepted_at = -5;
    negative.last_check_in = 1;
    cases.push_back(negative);
    payload zero;
    zero.room = "";
    cases.push_back(zero);

    for (const payload& p : cases) {
        std::string v = seal(*ring, p);
        auto r = open(*ring, v, p.room);
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_EQ(*r, p);
        EXPECT_EQ(r->version, format_version);
        EXPECT_EQ(key_id_of(v), "k1");
    }
}

// A new visitor's answer seals its cookie on the stack: the longest payload, under the longest
// key id, fits, and opens as encode's value does.
TEST(CookieCodec, SealsIntoABufferAndTheLongestValueFits) {
    auto ring = ring_of({make_key("key-id-8", 1)});
    payload longest;
    longest.room = "shop";
    longest.bucket = std::numeric_limits<std::int64_t>::max();
    longest.accepted_at = std::numeric_limits<std::int64_t>::min();
    longest.last_check_in = std::numeric_limits<std::int64_t>::min();
    longest.ticket = std::numeric_limits<std::uint64_t>::max();
    longest.event_id = std::numeric_limits<std::uint32_t>::max();
    longest.flags = std::numeric_limits<std::uint32_t>::max();
    longest.flood_since = std::numeric_limits<std::int64_t>::max();
    longest.flood_count = std::numeric_limits<std::uint32_t>::max();
    longest.network = std::numeric_limits<std::uint32_t>::max();
    longest.estimate_shown_at = std::numeric_limits<std::int64_t>::max();
    longest.estimate_seconds = std::numeric_limits<std::uint32_t>::max();
    for (const payload& p : {longest, admitted_visitor()}) {
        std::array<char, max_sealed_size> buf;
        auto n = encode_to(*ring, p, buf);
        ASSERT_TRUE(n.ok()) << n.error().message();
        ASSERT_LE(*n, buf.size());
        const std::string v(buf.data(), *n);
        auto r = open(*ring, v, p.room);
        ASSERT_TRUE(r.ok()) << r.error().message();
        EXPECT_EQ(*r, p);
        EXPECT_EQ(v.size(), seal(*ring, p).size());  // the same format (the nonce differs)
        EXPECT_EQ(key_id_of(v), "key-id-8");
    }
}

TEST(CookieCodec, DecodeChecksAgeAndReturnsThePayload) {
    auto ring = ring_of({make_key("k1", 1)});
    payload p = admitted_visitor();
    auto r = decode(*ring, seal(*ring, p), "shop", now_tp, 5min);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, p);
}

TEST(CookieCodec, TypicalCookieIsUnder100Characters) {
    auto ring = ring_of({make_key("k1", 1)});
    std::string v = seal(*ring, admitted_visitor());
    EXPECT_LT(v.size(), 100u) << v;
    for (char c : v) {
        bool url_safe =
            std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        EXPECT_TRUE(url_safe) << "unexpected character " << int(c);
    }
    EXPECT_EQ(v.find('='), std::string::npos) << "base64url must not be padded";
}

TEST(CookieCodec, TheWatchAndTheBindingCostNothingWhenUnusedAndAFewBytesWhenUsed) {
    auto ring = ring_of({make_key("k1", 1)});
    payload plain = admitted_visitor();
    payload watched = plain;
    watched.flood_since = plain.last_check_in - 20'000;
    watched.flood_count = 9;
    watched.network = 0xA1B2C3D4u;
    const std::string a = seal(*ring, plain);
    const std::string b = seal(*ring, watched);
    // 4 bytes of watch (a 3-byte delta and a count) and 4 of network: 8 bytes, 11 characters.
    EXPECT_LE(b.size(), a.size() + 11);
    EXPECT_GT(b.size(), a.size());
    EXPECT_LT(b.size(), 110u) << b;
    EXPECT_EQ(open(*ring, b, "shop").value(), watched);
    EXPECT_EQ(open(*ring, a, "shop").value().network, 0u);
}

TEST(CookieCodec, TheFirstEstimateCostsAFewBytesAndACookieWithoutItOpensAsNone) {
    auto ring = ring_of({make_key("k1", 1)});
    payload queued = admitted_visitor();
    queued.accepted_at = 0;
    payload estimated = queued;
    estimated.estimate_shown_at = queued.last_check_in - 95'000;
    estimated.estimate_seconds = 720;
    const std::string a = seal(*ring, queued);
    const std::string b = seal(*ring, estimated);
    // A 3-byte delta and a 2-byte estimate: 5 bytes, 7 characters.
    EXPECT_LE(b.size(), a.size() + 7);
    EXPECT_GT(b.size(), a.size());
    EXPECT_EQ(open(*ring, b, "shop").value(), estimated);
    // A cookie without the field (sealed before it existed, or an admitted one) has no
    // estimate, and it is as long as a cookie of the format without the field always was.
    const auto plain = open(*ring, a, "shop").value();
    EXPECT_EQ(plain.estimate_shown_at, 0);
    EXPECT_EQ(plain.estimate_seconds, 0u);
    EXPECT_EQ(a.size(), seal(*ring, queued).size());
}

TEST(CookieCodec, UsesAFreshNonceForEveryCookie) {
    auto ring = ring_of({make_key("k1", 1)});
    payload p = admitted_visitor();
    std::string a = seal(*ring, p);
    std::string b = seal(*ring, p);
    EXPECT_NE(a, b);
    // The nonce follows the 2-byte room tag: the first 16 base64url characters after the dot
    // cover the tag and most of the nonce.
    EXPECT_NE(a.substr(3, 16), b.substr(3, 16));
}

TEST(CookieCodec, ForkedChildNeverReusesTheParentsNonces) {
    // Nonces are drawn many at a time per thread; a child must not hand out the parent's rest.
    auto ring = ring_of({make_key("k1", 1)});
    payload p = admitted_visitor();
    seal(*ring, p);  // the pool of this thread is now filled
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        auto v = encode(*ring, p);
        std::string out = v ? v.value() : std::string("failed");
        ssize_t n = ::write(fds[1], out.data(), out.size());
        ::_exit(n == static_cast<ssize_t>(out.size()) ? 0 : 1);
    }
    ::close(fds[1]);
    std::string from_child;
    char buf[256];
    ssize_t n = 0;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) {
        from_child.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::string from_parent = seal(*ring, p);
    ASSERT_EQ(from_child.size(), from_parent.size()) << from_child;
    // Characters 3..21 carry the room tag and the first 12 bytes of nonce-dependent data.
    EXPECT_NE(from_child.substr(3, 19), from_parent.substr(3, 19));
    EXPECT_TRUE(open(*ring, from_child, "shop").ok());
}

// Payloads whose sealed size leaves 0, 1 and 2 bytes in the last base64 group, so that the
// spare bits of a final partial group are covered too.
std::vector<payload> payloads_of_every_tail_length() {
    payload full = admitted_visitor();
    payload no_flags = full;
    no_flags.flags = 0;
    payload no_event = no_flags;
    no_event.event_id = 0;
    return {full, no_flags, no_event};
}

TEST(CookieCodec, RejectsEverySingleCharacterChange) {
    auto ring = ring_of({make_key("k1", 1)});
    std::set<std::size_t> tails;
    for (const payload& p : payloads_of_every_tail_length()) {
        const std::string v = seal(*ring, p);
        tails.insert((v.size() - 3) % 4);
        int tried = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            for (int c = 0; c < 256; ++c) {
                if (static_cast<char>(c) == v[i]) {
                    continue;
                }
                std::string bad = v;
                bad[i] = static_cast<char>(c);
                auto r = decode(*ring, bad, "shop", now_tp, 5min);
                ASSERT_FALSE(r.ok()) << "position " << i << " byte " << c << " of " << v;
                ++tried;
            }
        }
        EXPECT_EQ(tried, static_cast<int>(v.size()) * 255);
    }
    EXPECT_EQ(tails, (std::set<std::size_t>{0, 2, 3})) << "not every base64 tail was covered";
}

TEST(CookieCodec, RejectsEveryTruncation) {
    auto ring = ring_of({make_key("k1", 1)});
    const std::string v = seal(*ring, admitted_visitor());
    for (std::size_t n = 0; n < v.size(); ++n) {
        auto head = decode(*ring, v.substr(0, n), "shop", now_tp, 5min);
        EXPECT_FALSE(head.ok()) << "prefix of " << n;
        auto tail = decode(*ring, v.substr(v.size() - n), "shop", now_tp, 5min);
        EXPECT_FALSE(tail.ok()) << "suffix of " << n;
    }
}

TEST(CookieCodec, RejectsEveryExtension) {
    auto ring = ring_of({make_key("k1", 1)});
    const std::string v = seal(*ring, admitted_visitor());
    const std::string extra =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \"\n";
    for (char c : extra) {
        EXPECT_FALSE(decode(*ring, v + c, "shop", now_tp, 5min).ok()) << "append " << c;
        EXPECT_FALSE(decode(*ring, c + v, "shop", now_tp, 5min).ok()) << "prepend " << c;
    }
    for (const std::string& tail :
         std::vector<std::string>{"AA", "AAA", "AAAA", ".k1", std::string(300, 'A')}) {
        EXPECT_FALSE(decode(*ring, v + tail, "shop", now_tp, 5min).ok()) << tail;
    }
}

TEST(CookieCodec, RejectsUnknownKey) {
    auto old_ring = ring_of({make_key("k0", 9)});
    auto ring = ring_of({make_key("k1", 1)});
    auto r = decode(*ring, seal(*old_ring, admitted_visitor()), "shop", now_tp, 5min);
    EXPECT_EQ(r.error(), errc::unknown_key);
}

TEST(CookieCodec, RejectsSameKeyIdWithAnotherSecret) {
    auto a = ring_of({make_key("k1", 1)});
    auto b = ring_of({make_key("k1", 2)});
    auto r = decode(*b, seal(*a, admitted_visitor()), "shop", now_tp, 5min);
    EXPECT_EQ(r.error(), errc::bad_auth);
}

TEST(CookieCodec, RotatedRingDecodesOldCookiesAndSealsWithTheNewKey) {
    auto before = ring_of({make_key("k1", 1)});
    auto after = ring_of({make_key("k2", 2), make_key("k1", 1)});
    payload p = admitted_visitor();
    std::string old_value = seal(*before, p);

    auto r = decode(*after, old_value, "shop", now_tp, 5min);
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, p);

    std::string new_value = seal(*after, p);
    EXPECT_EQ(key_id_of(new_value), "k2");
    EXPECT_TRUE(decode(*after, new_value, "shop", now_tp, 5min).ok());
    EXPECT_EQ(decode(*before, new_value, "shop", now_tp, 5min).error(), errc::unknown_key);
}

TEST(CookieCodec, RejectsCookieOfAnotherRoom) {
    auto ring = ring_of({make_key("k1", 1)});
    std::string v = seal(*ring, admitted_visitor());
    EXPECT_EQ(decode(*ring, v, "checkout", now_tp, 5min).error(), errc::wrong_room);
    EXPECT_EQ(decode(*ring, v, "", now_tp, 5min).error(), errc::wrong_room);
    EXPECT_EQ(decode(*ring, v, "Shop", now_tp, 5min).error(), errc::wrong_room);
}

// The clear room tag as codec.hpp documents it: the top 16 bits of FNV-1a 32 of the room id.
std::uint32_t room_tag(std::string_view room) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : room) {
        h ^= c;
        h *= 16777619u;
    }
    return h >> 16;
}

TEST(CookieCodec, RoomIsBoundByAuthenticationNotOnlyByTheClearTag) {
    // Another room id whose clear tag collides with "shop": only the associated data can tell
    // the rooms apart.
    std::string twin;
    for (int i = 0; i < 10'000'000 && twin.empty(); ++i) {
        std::string candidate = "room-" + std::to_string(i);
        if (room_tag(candidate) == room_tag("shop")) {
            twin = candidate;
        }
    }
    ASSERT_FALSE(twin.empty());
    auto ring = ring_of({make_key("k1", 1)});
    std::string v = seal(*ring, admitted_visitor());
    EXPECT_EQ(decode(*ring, v, twin, now_tp, 5min).error(), errc::bad_auth);
}

// The blob of a value (no key id), by a plain base64url decoder of the test's own.
std::vector<std::uint8_t> blob_of(std::string_view value) {
    const std::string_view text = value.substr(value.find('.') + 1);
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::vector<std::uint8_t> out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : text) {
        acc = (acc << 6) | static_cast<std::uint32_t>(alphabet.find(c));
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>(acc >> bits));
        }
    }
    return out;
}

TEST(CookieCodec, SealsTheDocumentedAssociatedDataWhateverTheRoomIdLength) {
    // OpenSSL opens each value with the AAD "wrc1" | key id | 0x00 | room in one piece, however
    // encode feeds it: values sealed before and after a change of feeding open alike.
    const key k = make_key("k1", 1);
    auto ring = ring_of({k});
    for (std::size_t length : {1, 4, 63, 64, 65, 200}) {
        payload p = admitted_visitor();
        p.room = std::string(length, 'r');
        const std::string v = seal(*ring, p);
        ASSERT_TRUE(decode(*ring, v, p.room, now_tp, 5min).ok()) << length;
        const auto blob = blob_of(v);
        ASSERT_GT(blob.size(), 2u + 12u + 16u);
        std::string aad = "wrc1k1";
        aad.push_back('\0');
        aad += p.room;
        const std::uint8_t* nonce = blob.data() + 2;
        const std::uint8_t* cipher = nonce + 12;
        const int cipher_size = static_cast<int>(blob.size() - 2 - 12 - 16);
        std::vector<std::uint8_t> tag(blob.end() - 16, blob.end());
        std::vector<std::uint8_t> plain(blob.size());
        EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
        int len = 0;
        int fin = 0;
        const bool opened =
            EVP_DecryptInit_ex2(ctx, EVP_aes_256_gcm(), k.secret.data(), nonce, nullptr) == 1 &&
            EVP_DecryptUpdate(ctx, nullptr, &len,
                              reinterpret_cast<const unsigned char*>(aad.data()),
                              static_cast<int>(aad.size())) == 1 &&
            EVP_DecryptUpdate(ctx, plain.data(), &len, cipher, cipher_size) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, tag.data()) == 1 &&
            EVP_DecryptFinal_ex(ctx, plain.data() + len, &fin) == 1;
        EVP_CIPHER_CTX_free(ctx);
        EXPECT_TRUE(opened) << "room id of " << length << " bytes";
        EXPECT_EQ(plain[0], format_version) << length;
    }
}

TEST(CookieCodec, ExpiresWhenLastCheckInIsOlderThanMaxAge) {
    auto ring = ring_of({make_key("k1", 1)});
    payload p = admitted_visitor();
    p.last_check_in = now_ms - 300'000;
    std::string v = seal(*ring, p);
    EXPECT_TRUE(decode(*ring, v, "shop", now_tp, 300'000ms).ok()) << "exactly max age is valid";
    EXPECT_EQ(decode(*ring, v, "shop", now_tp, 299'999ms).error(), errc::expired);
    EXPECT_EQ(decode(*ring, v, "shop", now_tp + 1ms, 300'000ms).error(), errc::expired);
}

TEST(CookieCodec, ExpiresWhenLastCheckInIsFarInTheFuture) {
    auto ring = ring_of({make_key("k1", 1)});
    payload p = admitted_visitor();
    p.last_check_in = now_ms + 30'000;
    EXPECT_TRUE(decode(*ring, seal(*ring, p), "shop", now_tp, 5min).ok()) << "within clock skew";
    p.last_check_in = now_ms + 61'000;
    EXPECT_EQ(decode(*ring, seal(*ring, p), "shop", now_tp, 5min).error(), errc::expired);
    p.last_check_in = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(decode(*ring, seal(*ring, p), "shop", now_tp, 5min).error(), errc::expired);
    p.last_check_in = std::numeric_limits<std::int64_t>::min();
    EXPECT_EQ(decode(*ring, seal(*ring, p), "shop", now_tp, 5min).error(), errc::expired);
}

TEST(CookieCodec, CheckAgeFollowsTheSameRule) {
    payload p;
    p.last_check_in = now_ms - 10'000;
    EXPECT_FALSE(check_age(p, now_tp, 10s));
    EXPECT_EQ(check_age(p, now_tp, 9s), errc::expired);
    p.last_check_in = now_ms + 2'000;
    EXPECT_EQ(check_age(p, now_tp, 10s, 1s), errc::expired);
    EXPECT_FALSE(check_age(p, now_tp, 10s, 2s));
}

TEST(CookieCodec, RejectsEmptyAndHugeValues) {
    auto ring = ring_of({make_key("k1", 1)});
    std::string valid = seal(*ring, admitted_visitor());
    std::vector<std::string> bad = {
        "",
        ".",
        "k1",
        "k1.",
        ".AAAA",
        "k1..",
        "toolongid." + valid.substr(3),
        std::string(1 << 20, 'A'),
        "k1." + std::string(1 << 20, 'A'),
        valid + std::string(1 << 20, 'A'),
        std::string("k1.\0\0\0\0", 7),
        valid.substr(0, 3) + std::string(160, 'A'),  // longer than any sealed payload
    };
    for (const auto& v : bad) {
        auto r = decode(*ring, v, "shop", now_tp, 5min);
        EXPECT_EQ(r.error(), errc::malformed) << v.substr(0, 40);
    }
}

TEST(CookieCodec, SurvivesRandomBinaryInput) {
    auto ring = ring_of({make_key("k1", 1)});
    std::mt19937_64 rng(12345);
    std::string valid = seal(*ring, admitted_visitor());
    for (int i = 0; i < 20'000; ++i) {
        std::size_t n = rng() % 200;
        std::string v(n, '\0');
        for (auto& c : v) {
            c = static_cast<char>(rng());
        }
        if (i % 2 == 0 && n > 3) {
            v.replace(0, 3, "k1.");  // reach the key lookup and the cipher
        }
        EXPECT_FALSE(decode(*ring, v, "shop", now_tp, 5min).ok());
    }
}

TEST(CookieCodec, WorksFromManyThreadsAtOnce) {
    auto ring = ring_of({make_key("k2", 2), make_key("k1", 1)});
    auto older = ring_of({make_key("k1", 1)});
    std::string old_value = seal(*older, admitted_visitor());
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            payload p = admitted_visitor();
            for (int i = 0; i < 500; ++i) {
                p.ticket = static_cast<std::uint64_t>(t * 1000 + i);
                auto v = encode(*ring, p);
                auto back = v ? decode(*ring, v.value(), "shop", now_tp, 5min) : v.error();
                if (!back || back->ticket != p.ticket) {
                    ++failures;
                }
                if (!decode(*ring, old_value, "shop", now_tp, 5min)) {
                    ++failures;
                }
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    EXPECT_EQ(failures.load(), 0);
}

TEST(CookieCodec, KeepsWorkingWhenAThreadAlternatesBetweenRings) {
    // Each thread caches cipher contexts for two rings; a third must evict, not confuse.
    auto a = ring_of({make_key("k1", 1)});
    auto b = ring_of({make_key("k1", 2)});
    auto c = ring_of({make_key("k1", 3)});
    payload p = admitted_visitor();
    for (int i = 0; i < 5; ++i) {
        for (const auto* ring : {a.get(), b.get(), c.get()}) {
            std::string v = seal(*ring, p);
            EXPECT_TRUE(decode(*ring, v, "shop", now_tp, 5min).ok());
            for (const auto* other : {a.get(), b.get(), c.get()}) {
                if (other != ring) {
                    EXPECT_EQ(decode(*other, v, "shop", now_tp, 5min).error(), errc::bad_auth);
                }
            }
        }
    }
}

TEST(CookieCodec, KeyIdOfReadsTheClearPrefix) {
    EXPECT_EQ(key_id_of("k1.AAAA"), "k1");
    EXPECT_EQ(key_id_of("AAAA"), "");
    EXPECT_EQ(key_id_of("k 1.AAAA"), "");
    EXPECT_EQ(key_id_of(".AAAA"), "");
}

}  // namespace
}  // namespace waitroom::cookie
