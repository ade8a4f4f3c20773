// YAML → validated config. The walk never stops at the first problem: each one is recorded with
// the node's position and key path, so an operator fixes the whole file in one pass.
// This file reads the root mapping and holds the entry points; the YAML reader (yaml_reader.hpp),
// the top-level sections (load_sections.hpp) and the rooms (load_rooms.hpp) do the rest.

#include "waitroom/config/load.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <tuple>

#include "load_rooms.hpp"
#include "load_sections.hpp"
#include "yaml_reader.hpp"

namespace waitroom::config {

namespace detail {
namespace {

void read_root(loader& l, const YAML::Node& root, config& cfg) {
    fields f(l, root, "",
             {"listen", "trusted_proxies", "forwarded_headers", "origin", "threads", "node",
              "cookie", "state", "admin", "logging", "limits", "testing", "rooms"});
    if (!f.ok()) {
        return;
    }
    if (auto v = f.get("listen")) {
        cfg.listen.clear();
        if (v->IsScalar()) {
            cfg.listen.emplace_back();
            read_listener(l, *v, "listen", cfg.listen.back());
        } else if (l.list(*v, "listen")) {
            const YAML::Node seq = *v;
            for (std::size_t i = 0; i < seq.size(); ++i) {
                cfg.listen.emplace_back();
                read_listener(l, seq[i], "listen[" + std::to_string(i) + "]", cfg.listen.back());
            }
            if (v->size() == 0) {
                l.report(*v, "listen", "must list at least one address, like 0.0.0.0:8080");
            }
        }
    }
    if (auto v = f.get("trusted_proxies")) {
        read_trusted_proxies(l, *v, cfg.trusted_proxies);
    }
    if (auto v = f.get("forwarded_headers")) {
        if (auto m = l.choice<forwarded_mode>(
                *v, "forwarded_headers",
                {{"overwrite", forwarded_mode::overwrite}, {"append", forwarded_mode::append}})) {
            cfg.forwarded_headers = *m;
        }
    }
    if (auto v = f.get("origin")) {
        read_origin(l, *v, cfg.origin);
    }
    if (auto v = f.get("threads")) {
        if (v->IsScalar() && v->Scalar() == "auto") {
            cfg.threads = 0;
        } else if (auto t = l.integer(*v, "threads", 1, 1024,
                                      "must be \"auto\" or a positive number of threads")) {
            cfg.threads = static_cast<unsigned>(*t);
        }
    }
    if (auto v = f.get("node")) {
        read_node(l, *v, cfg.node);
    }
    if (auto v = f.get("cookie")) {
        read_cookie(l, *v, cfg.cookie);
    }
    YAML::Mark backend_mark = YAML::Mark::null_mark();
    if (auto v = f.get("state")) {
        read_state(l, *v, cfg.state, backend_mark);
    }
    if (auto v = f.get("admin")) {
        read_admin(l, *v, cfg.admin);
    }
    if (auto v = f.get("logging")) {
        read_logging(l, *v, cfg.logging);
    }
    if (auto v = f.get("limits")) {
        read_limits(l, *v, cfg.limits);
    }
    if (auto v = f.get("testing")) {
        read_testing(l, *v, cfg.testing);
    }
    if (auto v = f.get("rooms")) {
        read_rooms(l, *v, cfg.rooms);
    }
    // Every node must read the others' cookies, so a generated per-node key cannot work.
    if (cfg.state.backend == state_backend::redis && cfg.cookie.keys.empty()) {
        l.report(backend_mark, "state.backend",
                 "redis needs cookie.keys: every node must share the same cookie keys");
    }
}

}  // namespace
}  // namespace detail

namespace {

namespace fs = std::filesystem;

load_result load(std::string_view yaml, const std::string& name, const fs::path& base_dir,
                 const std::string& source_path) {
    std::error_code ec;
    fs::path base = fs::absolute(base_dir.empty() ? fs::path(".") : base_dir, ec);
    detail::loader l(name, base.lexically_normal());
    auto cfg = std::make_shared<config>();
    cfg->source_path = source_path;
    cfg->base_dir = base.lexically_normal().string();
    while (cfg->base_dir.size() > 1 && cfg->base_dir.back() == '/') {
        cfg->base_dir.pop_back();
    }
    try {
        YAML::Node root = YAML::Load(std::string(yaml));
        detail::read_root(l, root, *cfg);
    } catch (const YAML::ParserException& e) {
        l.report(e.mark, "", "YAML syntax error: " + e.msg);
    } catch (const YAML::Exception& e) {
        l.report(e.mark, "", "YAML error: " + e.msg);
    }
    if (cfg->cookie.key_file.empty()) {
        cfg->cookie.key_file = l.resolve("waitroom.key");
    }
    if (cfg->node.id.empty()) {
        cfg->node.id = detail::host_name();
    }
    load_result result;
    result.problems = std::move(l.problems());
    std::stable_sort(result.problems.begin(), result.problems.end(),
                     [](const problem& a, const problem& b) {
                         return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                     });
    if (result.problems.empty()) {
        result.cfg = std::move(cfg);
    }
    return result;
}

}  // namespace

load_result load_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        int err = errno;
        load_result r;
        r.problems.push_back(
            problem{path, 0, 0, "", std::string("cannot read the file: ") + std::strerror(err)});
        return r;
    }
    std::ostringstream text;
    text << in.rdbuf();
    fs::path dir = fs::path(path).parent_path();
    std::error_code ec;
    return load(text.str(), path, dir.empty() ? fs::path(".") : dir,
                fs::absolute(path, ec).lexically_normal().string());
}

load_result load_string(std::string_view yaml, const std::string& name,
                        const std::string& base_dir) {
    return load(yaml, name, base_dir, "");
}

}  // namespace waitroom::config
