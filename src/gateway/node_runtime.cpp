#include "waitroom/gateway/node_runtime.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <utility>

#include "waitroom/cookie/http_cookie.hpp"

namespace waitroom::gateway {

namespace {

// The files of cookie.keys are the same as before: the ring read then still holds.
bool same_keys(const config::cookie_settings& a, const config::cookie_settings& b) {
    return std::equal(a.keys.begin(), a.keys.end(), b.keys.begin(), b.keys.end(),
                      [](const auto& x, const auto& y) {
                          return x.id == y.id && x.secret_file == y.secret_file &&
                                 x.secret_env == y.secret_env;
                      });
}

}  // namespace

node_runtime::build_result node_runtime::build(config::snapshot cfg, const inputs& in) {
    build_result out;
    auto rt = std::make_shared<node_runtime>();
    rt->keys = in.keys;
    if (!rt->keys && in.previous && in.previous->keys &&
        same_keys(in.previous->cfg->cookie, cfg->cookie)) {
        rt->keys = in.previous->keys;
    }
    if (!rt->keys) {
        auto ring = cookie::load_key_ring(cfg->cookie);
        if (!ring.ok()) {
            out.error = std::move(ring.error);
            return out;
        }
        rt->keys = std::move(ring.ring);
        out.keys_changed = true;
    }
    auto pages = pages::page_templates::load(*cfg);
    if (!pages.ok()) {
        out.problems = std::move(pages.problems);
        return out;
    }
    rt->templates = std::move(pages.templates);
    rt->origins = std::make_shared<const origin_group>(
        cfg->origin, in.health ? in.health : std::make_shared<origin_health>(), in.metrics);
    rt->engine = std::make_shared<const room::engine>(
        cfg, room::windowing{}, in.overrides,
        in.health ? std::shared_ptr<const room::origin_gate>(in.health->gate()) : nullptr);
    for (const auto& r : cfg->rooms) {
        rt->cookie_names.push_back(cookie::cookie_name(r.cookie_suffix));
        rt->challenge_cookie_names.push_back(cookie::challenge_cookie_name(r.cookie_suffix));
    }
    for (const auto& room : rt->engine->rooms()) {
        for (const auto& name : room.secret_fields()) {
            if (std::none_of(
                    rt->secret_fields.begin(), rt->secret_fields.end(),
                    [&](const std::string& n) { return boost::beast::iequals(n, name); })) {
                rt->secret_fields.push_back(name);
            }
        }
    }
    if (in.admin) {
        auto token = admin::load_admin_token(cfg->admin);
        if (!token.error.empty()) {
            out.error = std::move(token.error);
            return out;
        }
        auto access = std::make_shared<admin::admin_access>();
        if (token.token) {
            access->token.emplace(*token.token);
        }
        access->allowed_hosts = cfg->admin.allowed_hosts;
        rt->admin = std::move(access);
    }
    rt->cfg = std::move(cfg);
    out.runtime = std::move(rt);
    return out;
}

std::shared_ptr<node_runtime> node_runtime::of_config(config::snapshot cfg) {
    auto rt = std::make_shared<node_runtime>();
    rt->origins = std::make_shared<const origin_group>(cfg->origin,
                                                       std::make_shared<origin_health>(), nullptr);
    rt->cfg = std::move(cfg);
    return rt;
}

}  // namespace waitroom::gateway
