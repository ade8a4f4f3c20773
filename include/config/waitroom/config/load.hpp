#pragma once
// Loading and validating a configuration file. Every problem is collected (not only the first)
// and names its place as `file:line:column: key.path: what is wrong`.

#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/config.hpp"

namespace waitroom::config {

struct problem {
    std::string file;     // as given to load_file, or the name given to load_string
    int line = 0;         // 1-based; 0 when unknown
    int column = 0;       // 1-based; 0 when unknown
    std::string path;     // key path, e.g. "rooms[1].total_active_users"
    std::string message;  // what is wrong and what is expected

    // "file:line:column: path: message"
    std::string to_string() const;
};

struct load_result {
    snapshot cfg;                   // null when there are problems
    std::vector<problem> problems;  // empty on success

    bool ok() const { return cfg != nullptr; }
};

// Reads and validates a YAML file. Relative paths inside it (templates, key files) resolve
// against the file's folder.
load_result load_file(const std::string& path);

// Same, from text; `name` stands for the file in messages, `base_dir` resolves relative paths.
load_result load_string(std::string_view yaml, const std::string& name = "<inline>",
                        const std::string& base_dir = ".");

// All problems, one `problem::to_string()` per line (each line ends in '\n'); what
// `waitroomd check` prints.
std::string format_problems(const std::vector<problem>& problems);

}  // namespace waitroom::config
