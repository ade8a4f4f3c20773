// The cost of one rendered queue page in each form the render cache keeps: the render itself,
// then gzip and brotli at the levels considered (bench/README.md, "Page compression").
//   build/bench/page_compress_bench
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "waitroom/config/config.hpp"
#include "waitroom/pages/page_encoding.hpp"
#include "waitroom/pages/page_renderer.hpp"

namespace {

using namespace waitroom;

config::config bench_config() {
    config::config cfg;
    config::room r;
    r.id = "shop";
    r.name = "Shop checkout";
    r.total_active_users = 100;
    r.new_users_per_minute = 100;
    cfg.rooms.push_back(r);
    return cfg;
}

const std::string& queue_page() {
    static const std::string page = [] {
        const auto cfg = bench_config();
        const auto loaded = pages::page_templates::load(cfg);
        return loaded.templates->preview(cfg.rooms[0], pages::preview_state::queued, "en-US");
    }();
    return page;
}

void Render(benchmark::State& state) {
    const auto cfg = bench_config();
    const auto loaded = pages::page_templates::load(cfg);
    for (auto _ : state) {
        benchmark::DoNotOptimize(
            loaded.templates->preview(cfg.rooms[0], pages::preview_state::queued, "en-US"));
    }
}
BENCHMARK(Render)->Unit(benchmark::kMillisecond);

void Gzip(benchmark::State& state) {
    std::size_t size = 0;
    for (auto _ : state) {
        size = pages::gzip_compress(queue_page(), static_cast<int>(state.range(0))).size();
    }
    state.counters["bytes"] = static_cast<double>(size);
    state.counters["page_bytes"] = static_cast<double>(queue_page().size());
}
BENCHMARK(Gzip)->Arg(6)->Arg(9)->Unit(benchmark::kMillisecond);

void Brotli(benchmark::State& state) {
    std::size_t size = 0;
    for (auto _ : state) {
        size = pages::brotli_compress(queue_page(), static_cast<int>(state.range(0))).size();
    }
    state.counters["bytes"] = static_cast<double>(size);
}
BENCHMARK(Brotli)->Arg(5)->Arg(6)->Arg(9)->Arg(11)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
