#pragma once
// The readers of the top-level sections of a config file other than `rooms` (load_rooms.hpp),
// private to src/config. Each reports its problems to the loader and keeps the default of every
// key that is absent.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "waitroom/config/config.hpp"
#include "yaml_reader.hpp"

namespace waitroom::config::detail {

// `listen` or one of its items: "host:port", or a mapping with address, tls, proxy_protocol,
// http2 and h2c.
void read_listener(loader& l, const YAML::Node& n, const std::string& path, listener& out);
// A listener's `tls` (load_tls.cpp): `{cert, key}` or `{certificates: [...]}`, min_version and
// ciphers.
void read_listener_tls(loader& l, const YAML::Node& n, const std::string& path,
                       std::optional<tls_settings>& out);
void read_trusted_proxies(loader& l, const YAML::Node& n, std::vector<cidr>& out);
void read_origin(loader& l, const YAML::Node& n, origin& out);
// This machine's name, the node id when the file gives none.
std::string host_name();
void read_node(loader& l, const YAML::Node& n, node_info& out);
void read_cookie(loader& l, const YAML::Node& n, cookie_settings& out);
// `backend_mark` is where state.backend was set, for a check that needs cookie.keys too.
void read_state(loader& l, const YAML::Node& n, state_settings& out, YAML::Mark& backend_mark);
void read_admin(loader& l, const YAML::Node& n, admin_settings& out);
void read_logging(loader& l, const YAML::Node& n, logging_settings& out);
void read_limits(loader& l, const YAML::Node& n, limits& out);
void read_testing(loader& l, const YAML::Node& n, testing_settings& out);

}  // namespace waitroom::config::detail
