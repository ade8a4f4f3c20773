// waitroom_sim: runs the accuracy scenarios against the real room/ and state/ code
// in virtual time and reports the DESIGN.md §5 metrics as a table and as JSON.
//   waitroom_sim [--scenario NAME|FILE.yaml]... [--seeds N] [--seed S] [--out DIR] [--json]
//                [--visitors] [--attacks]

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "report.hpp"
#include "scenario.hpp"
#include "simulator.hpp"

namespace {

void usage(std::ostream& o) {
    o << "usage: waitroom_sim [--scenario NAME|FILE.yaml]... [--seeds N] [--seed S] [--out DIR]"
         " [--json] [--visitors] [--attacks]\n"
         "  --scenario  a built-in scenario or a YAML file; repeatable (default: all built-ins)\n"
         "  --seeds N   run each scenario with N seeds (its seed, +1, ...) and report min /\n"
         "              median / max of each metric (default 1: one run, the full table)\n"
         "  --seed S    the first seed, instead of each scenario's own\n"
         "  --out DIR   write report.txt, report.json and the plots there (default: sim-out)\n"
         "  --json      print the JSON report on stdout instead of the table\n"
         "  --visitors  also write every visitor's record to DIR/visitors/NAME-SEED.json\n"
         "  --attacks   run the attacker's scenarios below, each beside its calm twin\n"
         "built-in scenarios:";
    for (const auto& n : waitroom::sim::builtin_names()) {
        o << ' ' << n;
    }
    o << " (and smoke-quiet, smoke-spike)\n";
    o << "attacker's scenarios:";
    for (const auto& n : waitroom::sim::attack_names()) {
        o << ' ' << n;
    }
    o << '\n';
}

}  // namespace

int main(int argc, char** argv) {
    using namespace waitroom::sim;
    std::vector<std::string> names;
    std::string out = "sim-out";
    bool json = false;
    bool dump_visitors = false;
    int seeds = 1;
    std::optional<std::uint64_t> first_seed;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if ((a == "--scenario" || a == "-s") && i + 1 < argc) {
            names.push_back(argv[++i]);
        } else if (a == "--out" && i + 1 < argc) {
            out = argv[++i];
        } else if ((a == "--seeds" || a == "--seed") && i + 1 < argc) {
            char* end = nullptr;
            const char* v = argv[++i];
            unsigned long long n = std::strtoull(v, &end, 10);
            if (end == v || *end != '\0' || (a == "--seeds" && (n < 1 || n > 1000))) {
                std::cerr << "waitroom_sim: " << a << ": expected a number (seeds: 1 to 1000)\n";
                return 2;
            }
            if (a == "--seeds") {
                seeds = static_cast<int>(n);
            } else {
                first_seed = n;
            }
        } else if (a == "--json") {
            json = true;
        } else if (a == "--visitors") {
            dump_visitors = true;
        } else if (a == "--attacks") {
            for (const auto& n : attack_names()) {
                names.push_back(n);
            }
        } else if (a == "--help" || a == "-h") {
            usage(std::cout);
            return 0;
        } else {
            std::cerr << "waitroom_sim: unknown argument '" << a << "'\n";
            usage(std::cerr);
            return 2;
        }
    }
    if (names.empty()) {
        names = builtin_names();
    }
    std::vector<scenario> scenarios;
    for (const auto& n : names) {
        if (auto b = builtin(n)) {
            scenarios.push_back(*b);
            continue;
        }
        if (!std::filesystem::exists(n)) {
            std::cerr << "waitroom_sim: '" << n << "' is neither a built-in scenario nor a file\n";
            return 2;
        }
        std::string err;
        auto s = load_scenario(n, err);
        if (!s) {
            std::cerr << "waitroom_sim: " << err << '\n';
            return 2;
        }
        scenarios.push_back(*s);
    }

    std::error_code ec;
    std::filesystem::create_directories(dump_visitors ? out + "/visitors" : out, ec);
    if (ec) {
        std::cerr << "waitroom_sim: cannot create " << out << ": " << ec.message() << '\n';
        return 1;
    }
    std::vector<std::pair<scenario, metrics>> rows;
    std::vector<std::pair<scenario, std::vector<metrics>>> seed_rows;
    nlohmann::json report = {{"scenarios", nlohmann::json::array()}};
    for (auto s : scenarios) {
        if (first_seed) {
            s.seed = *first_seed;
        }
        nlohmann::json runs = nlohmann::json::array();
        std::vector<metrics> per_seed;
        const std::uint64_t base_seed = s.seed;
        for (int k = 0; k < seeds; ++k) {
            scenario sk = s;
            sk.seed = base_seed + static_cast<std::uint64_t>(k);
            sim_result r = run(sk);
            metrics m = compute(sk, r);
            nlohmann::json j = to_json(sk, m);
            j["seed"] = sk.seed;
            j["diagnostics"] = diagnostics(r);
            if (dump_visitors) {
                std::ofstream(out + "/visitors/" + sk.name + "-" + std::to_string(sk.seed) +
                              ".json")
                    << visitors_json(sk, r).dump() << '\n';
            }
            if (sk.plot && k == 0) {
                std::string png = plot(sk, r, out);
                j["plot"] = png.empty() ? nlohmann::json(nullptr) : nlohmann::json(png);
            }
            if (!json) {
                std::cerr << "ran " << sk.name << " seed " << sk.seed << " (" << m.decisions
                          << " decisions)\n";
            }
            runs.push_back(std::move(j));
            per_seed.push_back(m);
            if (k == 0) {
                rows.emplace_back(sk, m);
            }
        }
        if (seeds == 1) {
            report["scenarios"].push_back(runs.front());
        } else {
            nlohmann::json j = seed_summary(s, per_seed);
            j["runs"] = std::move(runs);
            report["scenarios"].push_back(std::move(j));
        }
        seed_rows.emplace_back(s, std::move(per_seed));
    }
    std::string text = seeds == 1 ? table(rows) : seed_table(seed_rows);
    std::ofstream(out + "/report.txt") << text;
    std::ofstream(out + "/report.json") << report.dump(2) << '\n';
    if (json) {
        std::cout << report.dump(2) << '\n';
    } else {
        std::cout << text;
    }
    return 0;
}
