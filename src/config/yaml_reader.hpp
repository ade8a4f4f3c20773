#pragma once
// Reading YAML for the config loader, private to src/config. `loader` collects every problem
// with its file:line:column and key path and reads typed values (strings, integers, durations,
// sizes, times, choices, paths); `fields` checks the keys of one mapping. The section readers
// (load_sections.hpp) and the room schema (load_rooms.hpp) are written in these terms.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"

namespace waitroom::config::detail {

// The origin's base path, room routes and bypass path prefixes must all be canonical.
inline constexpr std::string_view canonical_path_hint =
    "must be a canonical path like /shop: no empty, . or .. segments, no ;parameters, "
    "no escaped letters, digits or -._~, escapes in upper-case hex (see README, Routing)";

// Whether every character of `s` is an ASCII letter or digit or one of `extra`.
bool charset_ok(std::string_view s, std::string_view extra);

// ASCII lower case.
std::string lowercase(std::string s);

template <class T>
void assign(T& dst, T v) {
    dst = std::move(v);
}
template <class T>
void assign(std::optional<T>& dst, T v) {
    dst = std::move(v);
}

class loader;

// The keys of one YAML mapping. Unknown and duplicate keys are reported when it is built;
// get() hands out the values of known keys.
class fields {
  public:
    fields(loader& l, const YAML::Node& node, std::string path,
           std::initializer_list<std::string_view> known);

    bool ok() const { return ok_; }
    std::optional<YAML::Node> get(std::string_view key) const {
        for (const auto& e : entries_) {
            if (e.key == key) {
                return e.value;
            }
        }
        return std::nullopt;
    }
    // Key path of a child, e.g. "rooms[0]" + "name" → "rooms[0].name".
    std::string at(std::string_view key) const {
        return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }

  private:
    struct entry {
        std::string key;
        YAML::Node value;
    };
    std::string path_;
    std::vector<entry> entries_;
    bool ok_ = true;
};

// One file being read: its name and folder, and every problem found in it so far.
class loader {
  public:
    loader(std::string file, std::filesystem::path base_dir)
        : file_(std::move(file)), base_dir_(std::move(base_dir)) {}

    std::vector<problem>& problems() { return problems_; }

    void report(const YAML::Mark& m, std::string path, std::string message);
    void report(const YAML::Node& n, std::string path, std::string message);

    // yaml-cpp marks an empty value (`key:`) at the token after it, often on the next line;
    // pointing at the key reads better.
    void note_null_value(const YAML::Node& value, const YAML::Mark& key_mark) {
        null_values_.emplace_back(value, key_mark);
    }

    // ---- scalar readers: each reports and returns nullopt on a bad value ----

    std::optional<std::string> string(const YAML::Node& n, const std::string& path);
    std::optional<bool> boolean(const YAML::Node& n, const std::string& path);
    std::optional<std::uint64_t> integer(const YAML::Node& n, const std::string& path,
                                         std::uint64_t min, std::uint64_t max,
                                         std::string_view what);
    std::optional<duration> dur(const YAML::Node& n, const std::string& path, duration min);
    std::optional<std::uint64_t> size(const YAML::Node& n, const std::string& path,
                                      std::uint64_t min, std::uint64_t max);

    template <class E>
    std::optional<E> choice(const YAML::Node& n, const std::string& path,
                            std::initializer_list<std::pair<std::string_view, E>> options) {
        if (n.IsScalar()) {
            for (const auto& [name, value] : options) {
                if (n.Scalar() == name) {
                    return value;
                }
            }
        }
        std::string msg = "must be one of ";
        bool first = true;
        for (const auto& o : options) {
            msg += first ? "" : ", ";
            msg += o.first;
            first = false;
        }
        report(n, path, msg);
        return std::nullopt;
    }

    std::optional<time_point> time(const YAML::Node& n, const std::string& path);

    // A list; null counts as empty. Reports and returns false for anything else.
    bool list(const YAML::Node& n, const std::string& path);

    // ---- setters over a mapping: a no-op when the key is absent ----

    template <class Dst>
    void set_string(const fields& f, std::string_view key, Dst& dst) {
        if (auto n = f.get(key)) {
            if (auto v = string(*n, f.at(key))) {
                assign(dst, std::move(*v));
            }
        }
    }
    template <class Dst>
    void set_bool(const fields& f, std::string_view key, Dst& dst) {
        if (auto n = f.get(key)) {
            if (auto v = boolean(*n, f.at(key))) {
                assign(dst, *v);
            }
        }
    }
    template <class T, class Dst>
    void set_integer(const fields& f, std::string_view key, Dst& dst, std::uint64_t min,
                     std::uint64_t max, std::string_view what = "must be a positive integer") {
        if (auto n = f.get(key)) {
            if (auto v = integer(*n, f.at(key), min, max, what)) {
                assign(dst, static_cast<T>(*v));
            }
        }
    }
    template <class Dst>
    void set_duration(const fields& f, std::string_view key, Dst& dst, duration min) {
        if (auto n = f.get(key)) {
            if (auto v = dur(*n, f.at(key), min)) {
                assign(dst, *v);
            }
        }
    }
    // A file path; relative paths resolve against the config file's folder.
    template <class Dst>
    void set_path(const fields& f, std::string_view key, Dst& dst) {
        if (auto n = f.get(key)) {
            if (auto v = string(*n, f.at(key))) {
                assign(dst, v->empty() ? std::string{} : resolve(*v));
            }
        }
    }

    std::string resolve(const std::string& p) const;

    // A secret file that is too open is refused here, at its setting, so that `check` reports
    // it too; the reader checks again on the descriptor it reads (config::read_secret_file).
    void check_secret_mode(const fields& f, std::string_view key, const std::string& file);

    // Templates are read at load time so that a reload with a missing file fails cleanly.
    void check_readable(const YAML::Node& n, const std::string& path, const std::string& file);

    static std::string describe(duration d);

  private:
    std::string file_;
    std::filesystem::path base_dir_;
    std::vector<problem> problems_;
    std::vector<std::pair<YAML::Node, YAML::Mark>> null_values_;
};

}  // namespace waitroom::config::detail
