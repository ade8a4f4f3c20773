// The per-worker page cache: a rendered page is kept by room, event, state version, band and
// the whole model, so a spike of queued refreshes costs a hash lookup, no lock and no template
// walk. On a miss it renders through the worker's own copy of the compiled templates.
#include "waitroom/pages/page_renderer.hpp"

#include <algorithm>
#include <functional>

#include "templates_internal.hpp"

namespace waitroom::pages {

namespace {

// The cache compares whole models so it can never serve another visitor's values. If a field is
// added to page_model this fails to compile: add it to same_values() here, to_data()
// (template_render.cpp) and render_json() (page_json.cpp).
static_assert(sizeof(room::page_model) == 280,
              "page_model changed: update same_values, to_data and render_json");

// queueing_method is left out: it is a view, and the cache keeps its own copy (see slot).
bool same_values(const room::page_model& a, const room::page_model& b) {
    return a.in_waiting_room == b.in_waiting_room && a.queue_position == b.queue_position &&
           a.wait_time_known == b.wait_time_known && a.wait_time == b.wait_time &&
           a.wait_time_hours == b.wait_time_hours &&
           a.wait_time_hour_minutes == b.wait_time_hour_minutes &&
           a.wait_time_25_percentile == b.wait_time_25_percentile &&
           a.wait_time_50_percentile == b.wait_time_50_percentile &&
           a.wait_time_75_percentile == b.wait_time_75_percentile &&
           a.wait_time_seconds == b.wait_time_seconds && a.queue_is_full == b.queue_is_full &&
           a.queue_all == b.queue_all && a.origin_unavailable == b.origin_unavailable &&
           a.last_updated_ms == b.last_updated_ms &&
           a.refresh_interval_seconds == b.refresh_interval_seconds &&
           a.is_fifo_queue == b.is_fifo_queue && a.is_random_queue == b.is_random_queue &&
           a.is_passthrough_queue == b.is_passthrough_queue &&
           a.is_reject_queue == b.is_reject_queue && a.is_event_active == b.is_event_active &&
           a.is_event_prequeueing == b.is_event_prequeueing &&
           a.time_until_event_start == b.time_until_event_start &&
           a.time_until_event_end == b.time_until_event_end &&
           a.shuffle_at_event_start == b.shuffle_at_event_start && a.room_name == b.room_name &&
           a.wait_time_formatted == b.wait_time_formatted &&
           a.time_until_event_start_formatted == b.time_until_event_start_formatted &&
           a.time_until_event_end_formatted == b.time_until_event_end_formatted &&
           a.challenge_required == b.challenge_required &&
           a.challenge_difficulty == b.challenge_difficulty;
}

enum class page_kind : std::uint8_t { queue, reject, json };

struct slot {
    bool used = false;
    page_kind kind = page_kind::queue;
    std::uint64_t stamp = 0;  // last use, for choosing the way to evict
    std::string room_id;
    std::string event;
    page_key key;
    room::page_model model;  // its queueing_method view is cleared: it may not outlive a reload
    std::string method;      // the model's queueing_method, owned
    page_body body;
};

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
    // splitmix64 step: cheap and spreads sequential versions and bands over the slots
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h;
}

}  // namespace

struct page_renderer::impl {
    std::shared_ptr<const page_templates> templates;
    std::vector<detail::compiled> own;  // this thread's copies: kainjow's render is not const
    std::vector<slot> slots;            // 2-way set-associative, size a power of two
    std::uint64_t tick = 0;
    std::uint64_t newest = 0;  // the newest state version asked for
    cache_stats stats;

    // A page of a state version before the last two can never be asked for again (the key
    // carries the version, and versions only grow): its slot is emptied when a new version
    // appears, so the cache holds the pages of the live state, not up to its size in dead ones.
    void forget_before(std::uint64_t version) {
        if (version <= newest) {
            return;
        }
        newest = version;
        for (auto& s : slots) {
            if (s.used && s.key.state_version + 1 < newest) {
                s = slot{};
            }
        }
    }

    void adopt(std::shared_ptr<const page_templates> t) {
        templates = std::move(t);
        own = templates->impl_->templates;
        for (auto& s : slots) {
            s = slot{};
        }
    }

    const detail::room_entry& entry(std::string_view room_id) const {
        const auto& rooms = templates->impl_->rooms;
        const auto it = rooms.find(room_id);
        return it == rooms.end() ? templates->impl_->fallback : it->second;
    }

    // Finds the cached body or renders it with `make` into the older way of the set.
    template <typename Make>
    page_body lookup(page_kind kind, std::string_view room_id, std::string_view event,
                     const page_key& key, const room::page_model& model, Make&& make) {
        std::uint64_t h = std::hash<std::string_view>{}(room_id);
        h = mix(h, std::hash<std::string_view>{}(event));
        h = mix(h, key.state_version);
        h = mix(h, key.band);
        h = mix(h, static_cast<std::uint64_t>(kind));
        const std::size_t base = static_cast<std::size_t>(h) & (slots.size() - 1) & ~std::size_t{1};
        ++tick;
        forget_before(key.state_version);
        for (std::size_t way = 0; way < 2; ++way) {
            auto& s = slots[base + way];
            if (s.used && s.kind == kind && s.key.state_version == key.state_version &&
                s.key.band == key.band && s.room_id == room_id && s.event == event &&
                s.method == model.queueing_method && same_values(s.model, model)) {
                s.stamp = tick;
                ++stats.hits;
                return s.body;
            }
        }
        ++stats.misses;
        auto& a = slots[base];
        auto& b = slots[base + 1];
        auto& victim = !a.used ? a : !b.used ? b : (a.stamp <= b.stamp ? a : b);
        victim.used = true;
        victim.kind = kind;
        victim.stamp = tick;
        victim.room_id.assign(room_id);
        victim.event.assign(event);
        victim.key = key;
        victim.model = model;
        victim.model.queueing_method = {};
        victim.method.assign(model.queueing_method);
        victim.body = rendered_page::compress(make());
        return victim.body;
    }

    std::string render_index(std::size_t index, const room::page_model& model,
                             const detail::room_page_options& options) {
        auto& c = own[index];
        return detail::render(c.tmpl, c, model, options);
    }
};

page_renderer::page_renderer(std::shared_ptr<const page_templates> templates,
                             std::size_t cache_slots)
    : impl_(std::make_unique<impl>()) {
    std::size_t n = 2;
    while (n < cache_slots) {
        n <<= 1;
    }
    impl_->slots.resize(n);
    impl_->adopt(std::move(templates));
}

page_renderer::~page_renderer() = default;

void page_renderer::set_templates(std::shared_ptr<const page_templates> templates) {
    impl_->adopt(std::move(templates));
}

page_body page_renderer::queue_page(std::string_view room_id, std::string_view event_name,
                                    const page_key& key, const room::page_model& model) {
    const auto& e = impl_->entry(room_id);
    std::size_t index = e.queue_template;
    if (!event_name.empty()) {
        for (const auto& [name, idx] : e.events) {
            if (name == event_name) {
                index = idx;
                break;
            }
        }
    }
    return impl_->lookup(page_kind::queue, room_id, event_name, key, model,
                         [&] { return impl_->render_index(index, model, e.options); });
}

page_body page_renderer::reject_page(std::string_view room_id, const page_key& key,
                                     const room::page_model& model) {
    const auto& e = impl_->entry(room_id);
    if (!e.custom) {
        return e.reject_static;
    }
    return impl_->lookup(page_kind::reject, room_id, {}, key, model,
                         [&] { return impl_->render_index(e.reject_template, model, e.options); });
}

page_body page_renderer::json(std::string_view room_id, const page_key& key,
                              const room::page_model& model) {
    return impl_->lookup(page_kind::json, room_id, {}, key, model,
                         [&] { return render_json(model); });
}

page_renderer::cache_stats page_renderer::stats() const {
    cache_stats out = impl_->stats;
    out.entries = static_cast<std::size_t>(std::count_if(impl_->slots.begin(), impl_->slots.end(),
                                                         [](const slot& s) { return s.used; }));
    return out;
}

}  // namespace waitroom::pages
