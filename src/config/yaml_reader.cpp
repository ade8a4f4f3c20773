// The YAML reader of the config loader: problem reports, typed values and the key check of a
// mapping (see yaml_reader.hpp).

#include "yaml_reader.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <system_error>

#include "waitroom/config/secret_file.hpp"
#include "waitroom/config/values.hpp"

namespace waitroom::config::detail {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view duration_hint = "must be a duration like 90s or 5m";
constexpr std::string_view size_hint = "must be a size like 16KiB, 1MiB or a number of bytes";
constexpr std::string_view time_hint =
    "must be an RFC 3339 time like 2026-12-01T10:00:00Z or 2026-12-01T11:00:00+01:00";

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        row[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}

}  // namespace

bool charset_ok(std::string_view s, std::string_view extra) {
    return std::all_of(s.begin(), s.end(), [&](char c) {
        auto u = static_cast<unsigned char>(c);
        return (u < 0x80 && std::isalnum(u)) || extra.find(c) != std::string_view::npos;
    });
}

std::string lowercase(std::string s) {
    for (char& c : s) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
}

void loader::report(const YAML::Mark& m, std::string path, std::string message) {
    problem p;
    p.file = file_;
    if (!m.is_null()) {
        p.line = m.line + 1;
        p.column = m.column + 1;
    }
    p.path = std::move(path);
    p.message = std::move(message);
    problems_.push_back(std::move(p));
}

void loader::report(const YAML::Node& n, std::string path, std::string message) {
    YAML::Mark m = n.Mark();
    if (n.IsNull()) {
        for (const auto& [node, key_mark] : null_values_) {
            if (node.is(n)) {
                m = key_mark;
                break;
            }
        }
    }
    report(m, std::move(path), std::move(message));
}

std::optional<std::string> loader::string(const YAML::Node& n, const std::string& path) {
    if (n.IsNull()) {
        return std::string{};
    }
    if (!n.IsScalar()) {
        report(n, path, "must be a string");
        return std::nullopt;
    }
    return n.Scalar();
}

std::optional<bool> loader::boolean(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
        const std::string& s = n.Scalar();
        if (s == "true" || s == "True" || s == "TRUE") {
            return true;
        }
        if (s == "false" || s == "False" || s == "FALSE") {
            return false;
        }
    }
    report(n, path, "must be true or false");
    return std::nullopt;
}

std::optional<std::uint64_t> loader::integer(const YAML::Node& n, const std::string& path,
                                             std::uint64_t min, std::uint64_t max,
                                             std::string_view what) {
    std::uint64_t v = 0;
    if (n.IsScalar()) {
        const std::string& s = n.Scalar();
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc{} && end == s.data() + s.size() && !s.empty() && v >= min && v <= max) {
            return v;
        }
        if (ec == std::errc{} && end == s.data() + s.size() && !s.empty() && v > max) {
            report(n, path, std::string(what) + " no larger than " + std::to_string(max));
            return std::nullopt;
        }
    }
    report(n, path, std::string(what));
    return std::nullopt;
}

std::optional<duration> loader::dur(const YAML::Node& n, const std::string& path, duration min) {
    if (n.IsScalar()) {
        const std::string& s = n.Scalar();
        if (auto d = parse_duration(s)) {
            if (*d >= min) {
                return d;
            }
            report(n, path, "must be at least " + describe(min));
            return std::nullopt;
        }
        if (!s.empty() &&
            std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            report(n, path,
                   std::string(duration_hint) + "; a bare number has no unit (did you mean " + s +
                       "s?)");
            return std::nullopt;
        }
    }
    report(n, path, std::string(duration_hint));
    return std::nullopt;
}

std::optional<std::uint64_t> loader::size(const YAML::Node& n, const std::string& path,
                                          std::uint64_t min, std::uint64_t max) {
    if (n.IsScalar()) {
        if (auto v = parse_size(n.Scalar())) {
            if (*v < min) {
                report(n, path, "must be at least " + std::to_string(min) + " bytes");
                return std::nullopt;
            }
            if (*v > max) {
                report(n, path, "must be at most " + std::to_string(max) + " bytes");
                return std::nullopt;
            }
            return v;
        }
    }
    report(n, path, std::string(size_hint));
    return std::nullopt;
}

std::optional<time_point> loader::time(const YAML::Node& n, const std::string& path) {
    if (n.IsScalar()) {
        if (auto t = parse_rfc3339(n.Scalar())) {
            return t;
        }
    }
    report(n, path, std::string(time_hint));
    return std::nullopt;
}

bool loader::list(const YAML::Node& n, const std::string& path) {
    if (n.IsSequence() || n.IsNull()) {
        return true;
    }
    report(n, path, "must be a list");
    return false;
}

std::string loader::resolve(const std::string& p) const {
    fs::path path(p);
    if (path.is_absolute()) {
        return path.lexically_normal().string();
    }
    return (base_dir_ / path).lexically_normal().string();
}

void loader::check_secret_mode(const fields& f, std::string_view key, const std::string& file) {
    auto n = f.get(key);
    if (!n || file.empty()) {
        return;
    }
    if (auto problem = secret_file_mode_problem(file); !problem.empty()) {
        report(*n, f.at(key), std::move(problem));
    }
}

void loader::check_readable(const YAML::Node& n, const std::string& path, const std::string& file) {
    std::error_code ec;
    auto st = fs::status(file, ec);
    if (!fs::exists(st)) {
        report(n, path, "file not found: " + file);
    } else if (fs::is_directory(st)) {
        report(n, path, "is a folder, not a file: " + file);
    } else if (!std::ifstream(file, std::ios::binary).good()) {
        report(n, path, "file cannot be read: " + file);
    }
}

std::string loader::describe(duration d) {
    auto ms = d.count();
    if (ms % 60'000 == 0) {
        return std::to_string(ms / 60'000) + "m";
    }
    if (ms % 1000 == 0) {
        return std::to_string(ms / 1000) + "s";
    }
    return std::to_string(ms) + "ms";
}

fields::fields(loader& l, const YAML::Node& node, std::string path,
               std::initializer_list<std::string_view> known)
    : path_(std::move(path)) {
    if (node.IsNull()) {
        return;  // `key:` with nothing after it: every default
    }
    if (!node.IsMap()) {
        l.report(node, path_, "must be a mapping of keys to values");
        ok_ = false;
        return;
    }
    std::map<std::string, int> seen;  // key → line of first use
    for (const auto& kv : node) {
        const YAML::Node k = kv.first;
        if (!k.IsScalar()) {
            l.report(k, path_, "keys must be plain names");
            continue;
        }
        std::string key = k.Scalar();
        std::string where = path_.empty() ? key : path_ + "." + key;
        if (auto [pos, fresh] = seen.emplace(key, k.Mark().line + 1); !fresh) {
            l.report(k, where,
                     "duplicate key (first set on line " + std::to_string(pos->second) + ")");
            continue;
        }
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            std::string msg = "unknown key";
            std::string_view best;
            std::size_t best_d = std::max<std::size_t>(2, key.size() / 4) + 1;
            for (auto candidate : known) {
                // The distance is at least the difference in length: a long unknown key costs
                // nothing (it was quadratic in the key's length).
                const std::size_t shortest = std::min(key.size(), candidate.size());
                if (std::max(key.size(), candidate.size()) - shortest >= best_d) {
                    continue;
                }
                std::size_t d = edit_distance(key, candidate);
                if (d < best_d) {
                    best_d = d;
                    best = candidate;
                }
            }
            if (!best.empty()) {
                msg += "; did you mean " + std::string(best) + "?";
            }
            l.report(k, where, msg);
            continue;
        }
        if (kv.second.IsNull()) {
            l.note_null_value(kv.second, k.Mark());
        }
        entries_.push_back({key, kv.second});
    }
}

}  // namespace waitroom::config::detail
