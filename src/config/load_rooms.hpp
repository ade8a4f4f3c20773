#pragma once
// The room schema of a config file (`rooms`, each with its routes, bypass rules and events),
// private to src/config.

#include <yaml-cpp/yaml.h>

#include <vector>

#include "waitroom/config/config.hpp"
#include "yaml_reader.hpp"

namespace waitroom::config::detail {

// Every room, then the checks that span rooms: ids and routes must be unique.
void read_rooms(loader& l, const YAML::Node& n, std::vector<room>& rooms);

}  // namespace waitroom::config::detail
