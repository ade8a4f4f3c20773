// Cost of the admission cookie on the request path (DESIGN.md §5): verifying a cookie must stay
// under 1 µs and issuing one under 2 µs.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "waitroom/cookie/challenge.hpp"
#include "waitroom/cookie/codec.hpp"
#include "waitroom/cookie/http_cookie.hpp"

namespace {

using namespace waitroom::cookie;

const waitroom::util::sys_time now{std::chrono::milliseconds{1'800'000'000'000}};

std::shared_ptr<const key_ring> bench_ring() {
    key current;
    current.id = "k2";
    key previous;
    previous.id = "k1";
    for (std::size_t i = 0; i < key_size; ++i) {
        current.secret[i] = static_cast<std::uint8_t>(i * 7 + 1);
        previous.secret[i] = static_cast<std::uint8_t>(i * 3 + 2);
    }
    return std::make_shared<const key_ring>(std::vector<key>{current, previous});
}

payload visitor() {
    payload p;
    p.room = "shop";
    p.bucket = 1'800'000'000'000 - 240'000;
    p.accepted_at = 1'800'000'000'000 - 120'000;
    p.last_check_in = 1'800'000'000'000 - 5'000;
    p.ticket = 0x0123456789ABCDEFull;
    p.event_id = 3;
    return p;
}

void BM_CookieEncode(benchmark::State& state) {
    auto ring = bench_ring();
    payload p = visitor();
    for (auto _ : state) {
        auto r = encode(*ring, p);
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieEncode);

void BM_CookieDecodeVerify(benchmark::State& state) {
    auto ring = bench_ring();
    const std::string value = encode(*ring, visitor()).value();
    for (auto _ : state) {
        auto r = decode(*ring, value, "shop", now, std::chrono::minutes{5});
        if (!r) {
            state.SkipWithError("decode failed");
            break;
        }
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieDecodeVerify);

// A value sealed with the older key of the ring (visitors from before a rotation).
void BM_CookieDecodeVerifyRotatedKey(benchmark::State& state) {
    key previous = bench_ring()->keys()[1];
    key_ring old_ring({previous});
    auto ring = bench_ring();
    const std::string value = encode(old_ring, visitor()).value();
    for (auto _ : state) {
        auto r = decode(*ring, value, "shop", now, std::chrono::minutes{5});
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieDecodeVerifyRotatedKey);

// What the gateway does per request: find the value in a Cookie header, then decode it.
void BM_CookieFindAndDecode(benchmark::State& state) {
    auto ring = bench_ring();
    const std::string header =
        "_ga=GA1.2.3.4; theme=dark; _cfwaitingroom=" + encode(*ring, visitor()).value() +
        "; session=abc";
    for (auto _ : state) {
        auto v = find_cookie(header, "_cfwaitingroom");
        auto r = decode(*ring, *v, "shop", now, std::chrono::minutes{5});
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieFindAndDecode);

// A forged value is refused at the tag check: it must cost no more than a good one.
void BM_CookieDecodeForged(benchmark::State& state) {
    auto ring = bench_ring();
    std::string value = encode(*ring, visitor()).value();
    value[value.size() - 3] = value[value.size() - 3] == 'A' ? 'B' : 'A';
    for (auto _ : state) {
        auto r = decode(*ring, value, "shop", now, std::chrono::minutes{5});
        benchmark::DoNotOptimize(r);
    }
}
BENCHMARK(BM_CookieDecodeForged);

void BM_CookieSetCookieHeader(benchmark::State& state) {
    auto ring = bench_ring();
    const std::string value = encode(*ring, visitor()).value();
    const std::string name = cookie_name("shop");
    waitroom::config::cookie_attributes attrs;
    for (auto _ : state) {
        auto h = set_cookie_value(name, value, std::chrono::seconds{300}, attrs, true);
        benchmark::DoNotOptimize(h);
    }
}
BENCHMARK(BM_CookieSetCookieHeader);

// Checking a challenge's solution (rooms[].challenge): the seed taken from the cookie value sent,
// one SHA-256 of seed and solution, its leading zero bits counted. A solution of the longest
// allowed form (64 characters) is the worst case; the cost does not depend on the difficulty.
void BM_ChallengeVerify(benchmark::State& state) {
    auto ring = bench_ring();
    const std::string value = encode(*ring, visitor()).value();
    const std::string solution(static_cast<std::size_t>(state.range(0)), 'z');
    for (auto _ : state) {
        bool ok = solves(challenge_seed(value), solution, 18);
        benchmark::DoNotOptimize(ok);
    }
}
BENCHMARK(BM_ChallengeVerify)->Arg(6)->Arg(64);

}  // namespace

BENCHMARK_MAIN();
