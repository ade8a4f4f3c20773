// waitroomd: argument parsing and the four commands (run, check, keygen, cookie). Hand-written
// because the grammar is tiny and a parsing library would be the larger part of it.

#include <spdlog/spdlog.h>

#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/load.hpp"
#include "waitroom/cookie/cli.hpp"
#include "waitroom/server/logging.hpp"
#include "waitroom/server/server.hpp"

#ifndef WAITROOM_VERSION
#define WAITROOM_VERSION "unknown"
#endif

namespace waitroom {
// The commit waitroomd was built from, written at build time (cmake/git_commit.cmake).
extern const char build_commit[];
}  // namespace waitroom

namespace {

constexpr int exit_ok = 0;
constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

constexpr const char* default_config = "config/waitroom.yaml";

constexpr std::string_view usage_text =
    R"(Usage:
  waitroomd [-c FILE]                          run the gateway (default FILE: config/waitroom.yaml)
  waitroomd check -c FILE                      validate FILE; print every problem and exit 1, or
                                               print "FILE: ok" and exit 0
  waitroomd keygen                             print a fresh random 256-bit cookie key (base64)
  waitroomd cookie -c FILE --room ID VALUE     decrypt an admission cookie value; print it as JSON

Options:
  -c, --config FILE   configuration file
      --room ID       room whose cookie VALUE is (cookie command)
  -h, --help          show this help and exit
  -V, --version       show the version and exit

Signals: SIGHUP reloads FILE; SIGTERM and SIGINT drain in-flight requests, then exit.
)";

enum class command { run, check, keygen, cookie };

struct arguments {
    command cmd = command::run;
    std::optional<std::string> config;
    std::optional<std::string> room;
    std::vector<std::string> positional;
    bool help = false;
    bool version = false;
};

struct usage_error {
    std::string message;
};

const char* command_name(command c) {
    switch (c) {
        case command::run:
            return "run";
        case command::check:
            return "check";
        case command::keygen:
            return "keygen";
        case command::cookie:
            return "cookie";
    }
    return "?";
}

// Parses argv; returns the message of the first usage error instead of throwing.
std::optional<usage_error> parse(int argc, char** argv, arguments& out) {
    std::vector<std::string_view> args(argv + 1, argv + argc);
    bool seen_command = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view a = args[i];
        // "--name=value" is accepted for the options that take a value.
        std::string_view name = a;
        std::optional<std::string_view> inline_value;
        if (a.starts_with("--")) {
            if (auto eq = a.find('='); eq != std::string_view::npos) {
                name = a.substr(0, eq);
                inline_value = a.substr(eq + 1);
            }
        }
        auto value = [&](std::string_view opt) -> std::optional<std::string> {
            if (inline_value) {
                return std::string(*inline_value);
            }
            if (i + 1 >= args.size()) {
                return std::nullopt;
            }
            (void)opt;
            return std::string(args[++i]);
        };

        if (name == "-h" || name == "--help") {
            out.help = true;
        } else if (name == "-V" || name == "--version") {
            out.version = true;
        } else if (name == "-c" || name == "--config") {
            auto v = value(name);
            if (!v) {
                return usage_error{"option '" + std::string(name) + "' needs a FILE"};
            }
            out.config = *v;
        } else if (name == "--room") {
            auto v = value(name);
            if (!v) {
                return usage_error{"option '--room' needs an ID"};
            }
            out.room = *v;
        } else if (a == "--") {
            for (++i; i < args.size(); ++i) {
                out.positional.emplace_back(args[i]);
            }
        } else if (a.size() > 1 && a.front() == '-') {
            return usage_error{"unknown option '" + std::string(a) + "'"};
        } else if (!seen_command && out.positional.empty() &&
                   (a == "check" || a == "keygen" || a == "cookie" || a == "run")) {
            seen_command = true;
            out.cmd = a == "check"    ? command::check
                      : a == "keygen" ? command::keygen
                      : a == "cookie" ? command::cookie
                                      : command::run;
        } else {
            out.positional.emplace_back(a);
        }
    }
    if (out.help || out.version) {
        return std::nullopt;
    }
    // Each command's own rules.
    std::size_t want_positional = out.cmd == command::cookie ? 1 : 0;
    if (out.positional.size() > want_positional) {
        if (!seen_command && out.positional.size() == 1) {
            return usage_error{"unknown command '" + out.positional.front() + "'"};
        }
        return usage_error{"unexpected argument '" + out.positional[want_positional] + "'"};
    }
    if (out.room && out.cmd != command::cookie) {
        return usage_error{"option '--room' belongs to the cookie command"};
    }
    if (out.config && out.cmd == command::keygen) {
        return usage_error{"the keygen command takes no configuration file"};
    }
    if (out.cmd == command::check && !out.config) {
        return usage_error{"check needs -c FILE"};
    }
    if (out.cmd == command::cookie) {
        if (!out.config) {
            return usage_error{"cookie needs -c FILE"};
        }
        if (!out.room) {
            return usage_error{"cookie needs --room ID"};
        }
        if (out.positional.empty()) {
            return usage_error{"cookie needs the cookie VALUE"};
        }
    }
    return std::nullopt;
}

void print_problems(const waitroom::config::load_result& r) {
    std::cerr << waitroom::config::format_problems(r.problems);
}

int run_check(const std::string& path) {
    auto r = waitroom::server::check_config(path);
    std::cerr << waitroom::config::format_problems(r.warnings);
    if (!r.loaded.ok()) {
        print_problems(r.loaded);
        return exit_failure;
    }
    std::cout << path << ": ok\n";
    return exit_ok;
}

int run_cookie(const arguments& a) {
    auto r = waitroom::config::load_file(*a.config);
    if (!r.ok()) {
        print_problems(r);
        return exit_failure;
    }
    return waitroom::cookie::decode_command(*r.cfg, *a.room, a.positional.front(), std::cout,
                                            std::cerr);
}

int run_gateway(const std::string& path) {
    auto r = waitroom::server::load_config(path);
    if (!r.ok()) {
        print_problems(r);
        std::cerr << "waitroomd: " << path << ": " << r.problems.size()
                  << " problem(s); not starting\n";
        return exit_failure;
    }
    waitroom::server::init_logging();
    waitroom::server::server s(path, r.cfg);
    int code = s.run();
    spdlog::shutdown();
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    arguments a;
    if (auto err = parse(argc, argv, a)) {
        std::cerr << "waitroomd: " << err->message << "\nTry 'waitroomd --help'.\n";
        return exit_usage;
    }
    if (a.help) {
        std::cout << usage_text;
        return exit_ok;
    }
    if (a.version) {
        std::cout << "waitroomd " << WAITROOM_VERSION << " (commit " << waitroom::build_commit
                  << ")\n";
        return exit_ok;
    }
    try {
        switch (a.cmd) {
            case command::check:
                return run_check(*a.config);
            case command::keygen:
                return waitroom::cookie::keygen_command(std::cout);
            case command::cookie:
                return run_cookie(a);
            case command::run:
                return run_gateway(a.config.value_or(default_config));
        }
    } catch (const std::exception& e) {
        // Startup only: nothing on the request path throws.
        std::cerr << "waitroomd " << command_name(a.cmd) << ": " << e.what() << '\n';
        return exit_failure;
    }
    return exit_failure;
}
