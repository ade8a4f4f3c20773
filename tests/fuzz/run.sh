#!/usr/bin/env bash
# Builds the cookie decoder fuzzer with clang (libFuzzer + ASan + UBSan) straight from the cookie
# sources and runs it for a bounded time. Usage: tests/fuzz/run.sh [seconds=30] [work dir]
# Without clang++ it says so and exits 0, so CI may call it on any machine.
set -euo pipefail

seconds="${1:-30}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${2:-${root}/build-fuzz}"

if ! command -v clang++ >/dev/null 2>&1; then
    echo "fuzz: clang++ not found; skipping the cookie decoder fuzzer"
    exit 0
fi

mkdir -p "${work}/corpus"
bin="${work}/cookie_decode_fuzz"

echo "fuzz: building ${bin}"
clang++ -std=c++20 -g -O1 -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"${root}/include" -I"${root}/src/cookie" \
    "${root}/tests/fuzz/cookie_decode_fuzz.cpp" \
    "${root}/src/cookie/base64.cpp" \
    "${root}/src/cookie/codec.cpp" \
    "${root}/src/cookie/error.cpp" \
    "${root}/src/cookie/http_cookie.cpp" \
    "${root}/src/cookie/key_ring.cpp" \
    -lcrypto -o "${bin}"

# Seeds: shapes of real values and headers, so the fuzzer reaches the cipher quickly.
printf 'k1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' \
    > "${work}/corpus/seed-value"
printf 'a=1; _cfwaitingroom="k1.AAAA"; _cfwaitingroom=k0.BBBB' > "${work}/corpus/seed-header"

echo "fuzz: running for ${seconds}s"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" \
    "${bin}" -max_total_time="${seconds}" -max_len=4096 -timeout=10 \
    -artifact_prefix="${work}/" "${work}/corpus"
echo "fuzz: cookie decoder survived ${seconds}s"
