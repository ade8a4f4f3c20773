// libFuzzer entry point for the cookie decoder: any bytes, as a cookie value or a Cookie header,
// must give a result without crashing, and a value we seal must open to the same payload.
// Built by tests/fuzz/run.sh with clang; also replayed by cookie_fuzz_replay under g++.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>

#include "waitroom/cookie/codec.hpp"
#include "waitroom/cookie/http_cookie.hpp"

namespace {

using namespace waitroom::cookie;

const key_ring& fuzz_ring() {
    static const auto ring = [] {
        key a;
        a.id = "k1";
        key b;
        b.id = "k0";
        for (std::size_t i = 0; i < key_size; ++i) {
            a.secret[i] = static_cast<std::uint8_t>(i);
            b.secret[i] = static_cast<std::uint8_t>(0xA5 ^ i);
        }
        return std::make_unique<key_ring>(std::vector<key>{a, b});
    }();
    return *ring;
}

std::int64_t read_i64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    std::memcpy(&v, p, sizeof v);
    return static_cast<std::int64_t>(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const key_ring& ring = fuzz_ring();
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const waitroom::util::sys_time now{std::chrono::milliseconds{1'800'000'000'000}};

    // 1. The bytes as a cookie value, for a couple of rooms.
    for (std::string_view room : {"shop", "", "room-with-a-longer-id"}) {
        auto r = decode(ring, text, room, now, std::chrono::minutes{5});
        if (r.ok() && r->room != room) {
            std::abort();
        }
        (void)open(ring, text, room);
    }
    (void)key_id_of(text);

    // 2. The bytes as a Cookie header; whatever is found is decoded too.
    if (auto v = find_cookie(text, "_cfwaitingroom")) {
        if (v->empty() || v->data() < text.data() || v->data() + v->size() > text.data() + size) {
            std::abort();
        }
        (void)decode(ring, *v, "shop", now, std::chrono::minutes{5});
    }

    // 3. The bytes as a payload: sealing then opening must give it back, and flipping any one
    //    byte of the value must be refused.
    if (size >= 36) {
        payload p;
        p.bucket = read_i64(data);
        p.accepted_at = read_i64(data + 8);
        p.last_check_in = read_i64(data + 16);
        p.ticket = static_cast<std::uint64_t>(read_i64(data + 24));
        std::memcpy(&p.event_id, data + 32, 4);
        p.flags = size > 36 ? data[36] : 0;
        p.room.assign(text.substr(size > 37 ? 37 : size, 16));
        if (p.flags & 0x80) {  // the first estimate shown (present bit 32)
            p.estimate_shown_at = p.bucket != 0 ? p.bucket : 1;
            p.estimate_seconds = p.event_id;
        }
        auto sealed = encode(ring, p);
        if (!sealed) {
            std::abort();
        }
        auto back = open(ring, sealed.value(), p.room);
        if (!back || !(*back == p)) {
            std::abort();
        }
        std::string changed = sealed.value();
        const std::size_t at = data[35] % changed.size();
        changed[at] = static_cast<char>(changed[at] ^ (data[34] | 1));
        if (open(ring, changed, p.room).ok()) {
            std::abort();
        }
    }
    return 0;
}
