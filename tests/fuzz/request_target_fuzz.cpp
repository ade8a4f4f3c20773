// libFuzzer entry point for the request-target canonicaliser and the router. Input: one byte
// picking the method and the HTTP version, then "Host\ntarget". Properties checked:
//   - no crash, no sanitizer report, whatever the bytes;
//   - canonical(canonical(x)) == canonical(x), for the target and for the Host;
//   - the forwarded target (with and without the origin's base path) routes to the same room
//     and bypass answer as x;
//   - a match path is a canonical path (no "//", dot segment, parameter or bad escape).
// Built by tests/fuzz/run.sh with clang; also replayed by request_target_fuzz_replay under g++.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/room/router.hpp"
#include "waitroom/util/request_target.hpp"

namespace {

using namespace waitroom;

struct rooms {
    std::vector<config::room> list;
    room::router router;
    std::vector<room::bypass_matcher> bypass;
};

const rooms& fuzz_rooms() {
    static const rooms r = [] {
        rooms out;
        config::room shop;
        shop.id = "shop";
        shop.path = "/shop";
        config::bypass_rule stat;
        stat.type = config::bypass_rule::kind::path_prefix;
        stat.value = "/static";
        shop.bypass.push_back(stat);
        config::room host;
        host.id = "host";
        host.host = "shop.example.com";
        host.path = "/";
        host.additional_routes.push_back({"api.example.com", "/cart/"});
        config::room iis;
        iis.id = "iis";
        iis.path = "/Admin/Panel";
        iis.case_insensitive_paths = true;
        out.list = {shop, host, iis};
        out.router = room::router(out.list);
        for (const auto& rc : out.list) {
            out.bypass.emplace_back(rc.bypass);
        }
        return out;
    }();
    return r;
}

// Room index and bypass answer for a host name and canonical target, as the gateway routes it;
// -1 = no room.
std::pair<int, bool> route(std::string_view host, const util::request_target& t) {
    const std::string_view path = t.match_path;
    const rooms& r = fuzz_rooms();
    auto idx = r.router.match(host, path);
    if (!idx) {
        return {-1, false};
    }
    room::request_view v;
    v.host = host;
    v.path = path;
    v.path_to_first_param = util::path_to_first_param(t.path);
    return {static_cast<int>(*idx), r.bypass[*idx].matches(v, path)};
}

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    static constexpr std::string_view methods[] = {"GET", "OPTIONS", "POST", "CONNECT"};
    const std::uint8_t pick = data[0];
    std::string_view method = methods[pick & 3];
    const bool http11 = (pick & 4) == 0;
    const bool has_host = (pick & 8) == 0;
    std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    auto nl = rest.find('\n');
    std::string_view host = nl == std::string_view::npos ? std::string_view{} : rest.substr(0, nl);
    std::string_view target = nl == std::string_view::npos ? rest : rest.substr(nl + 1);

    util::target_buffers buf;
    auto c = util::canonicalize_request(method, target, has_host ? &host : nullptr, http11, buf);
    if (c.status != util::target_status::ok) {
        check(!c.problem.empty());
        return 0;
    }
    check(!c.target.path.empty() && c.target.path.front() == '/');
    check(util::is_canonical_path(c.target.match_path));

    // Forwarded as the gateway does: "*", or the canonical path and the query.
    std::string fwd = c.target.form == util::target_form::asterisk
                          ? std::string("*")
                          : std::string(c.target.path) + std::string(c.target.query);
    std::string authority(c.host.authority);
    std::string_view fwd_host = authority;
    util::target_buffers buf2;
    auto again =
        util::canonicalize_request(method, fwd, c.host.valid ? &fwd_host : nullptr, http11, buf2);
    check(again.status == util::target_status::ok);
    check(again.target.path == c.target.path);
    check(again.target.match_path == c.target.match_path);
    check(again.target.query == c.target.query);
    check(again.host.valid == c.host.valid);
    if (c.host.valid) {
        check(again.host.name == c.host.name);
        check(again.host.authority == c.host.authority);
    }
    check(route(c.host.name, c.target) == route(again.host.name, again.target));

    // With the origin's base path before it, the origin still sees a canonical path, which
    // is the base path and then what the room matched.
    if (c.target.form != util::target_form::asterisk) {
        std::string based = "/app" + std::string(c.target.path);
        util::target_buffers buf3;
        auto at_origin = util::parse_request_target(method, based, buf3);
        check(at_origin.status == util::target_status::ok);
        check(at_origin.path == based);
        std::string_view stripped = at_origin.match_path.substr(4);
        check(stripped == c.target.match_path);
    }
    return 0;
}
