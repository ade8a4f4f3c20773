// Formatting of configuration problems for logs and `waitroomd check`.

#include "waitroom/config/load.hpp"

namespace waitroom::config {

std::string problem::to_string() const {
    std::string out = file;
    if (line > 0) {
        out += ':' + std::to_string(line) + ':' + std::to_string(column);
    }
    out += ": ";
    if (!path.empty()) {
        out += path + ": ";
    }
    out += message;
    return out;
}

std::string format_problems(const std::vector<problem>& problems) {
    std::string out;
    for (const auto& p : problems) {
        out += p.to_string();
        out += '\n';
    }
    return out;
}

}  // namespace waitroom::config
