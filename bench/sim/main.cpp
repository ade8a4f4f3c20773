// waitroom_sim: runs the accuracy scenarios of issue 6 against the real room/ and state/ code
// in virtual time and reports the DESIGN.md §5 metrics as a table and as JSON.
//   waitroom_sim [--scenario NAME|FILE.yaml]... [--out DIR] [--json]

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "report.hpp"
#include "scenario.hpp"
#include "simulator.hpp"

namespace {

void usage(std::ostream& o) {
    o << "usage: waitroom_sim [--scenario NAME|FILE.yaml]... [--out DIR] [--json]\n"
         "  --scenario  a built-in scenario or a YAML file; repeatable (default: all built-ins)\n"
         "  --out DIR   write report.txt, report.json and the plots there (default: sim-out)\n"
         "  --json      print the JSON report on stdout instead of the table\n"
         "built-in scenarios:";
    for (const auto& n : waitroom::sim::builtin_names()) {
        o << ' ' << n;
    }
    o << " (and smoke-quiet, smoke-spike)\n";
}

}  // namespace

int main(int argc, char** argv) {
    using namespace waitroom::sim;
    std::vector<std::string> names;
    std::string out = "sim-out";
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if ((a == "--scenario" || a == "-s") && i + 1 < argc) {
            names.push_back(argv[++i]);
        } else if (a == "--out" && i + 1 < argc) {
            out = argv[++i];
        } else if (a == "--json") {
            json = true;
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
    std::filesystem::create_directories(out, ec);
    if (ec) {
        std::cerr << "waitroom_sim: cannot create " << out << ": " << ec.message() << '\n';
        return 1;
    }
    std::vector<std::pair<scenario, metrics>> rows;
    nlohmann::json report = {{"scenarios", nlohmann::json::array()}};
    for (const auto& s : scenarios) {
        sim_result r = run(s);
        metrics m = compute(s, r);
        nlohmann::json j = to_json(s, m);
        j["diagnostics"] = diagnostics(r);
        if (s.plot) {
            std::string png = plot(s, r, out);
            j["plot"] = png.empty() ? nlohmann::json(nullptr) : nlohmann::json(png);
        }
        report["scenarios"].push_back(j);
        rows.emplace_back(s, m);
        if (!json) {
            std::cerr << "ran " << s.name << " (" << m.decisions << " decisions)\n";
        }
    }
    std::string text = table(rows);
    std::ofstream(out + "/report.txt") << text;
    std::ofstream(out + "/report.json") << report.dump(2) << '\n';
    if (json) {
        std::cout << report.dump(2) << '\n';
    } else {
        std::cout << text;
    }
    return 0;
}
