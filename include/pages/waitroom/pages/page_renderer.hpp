#pragma once
// Queue page, reject page and JSON rendering. Templates are compiled once per config snapshot
// (page_templates, shared read-only); each worker thread owns a page_renderer with a bounded
// cache, so a spike of queued refreshes costs a hash lookup, no lock and no template walk.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "waitroom/config/config.hpp"
#include "waitroom/config/load.hpp"
#include "waitroom/pages/page_encoding.hpp"
#include "waitroom/room/page_model.hpp"

namespace waitroom::pages {

// The page a preview shows (admin GET /rooms/{id}/preview): a visitor's while queued, while the
// room's event prequeues, or when the room turns visitors away.
enum class preview_state { queued, event, reject };

// The compiled templates of one config snapshot: the built-in queue and reject pages per
// language, and every room's (and event's) custom_page_html. Immutable once loaded.
class page_templates {
  public:
    struct load_result {
        std::shared_ptr<const page_templates> templates;  // null when there are problems
        // e.g. "shop.html:3:5: rooms[0].custom_page_html: template does not compile: ..."
        std::vector<config::problem> problems;

        bool ok() const { return templates != nullptr; }
    };

    // Reads and compiles every custom_page_html of `cfg` (paths already resolved by the config
    // loader). A missing file or a template that does not compile is a problem, never a throw.
    static load_result load(const config::config& cfg);

    // The built-in languages, en-US first.
    static std::span<const std::string_view> languages();

    // The built-in language used for `requested`: exact (case-insensitive), else the same
    // primary subtag ("de-AT" → "de-DE"), else "en-US".
    static std::string_view resolve_language(std::string_view requested);

    // The page `room` (a room of the snapshot these templates were loaded from) shows in `state`,
    // with sample values: no room state is read or changed. Built-in pages are in `language`, a
    // built-in language ("" or any other: the room's default_template_language); a custom
    // template is the room's (for `event`, its first event's when that has one), as written.
    std::string preview(const config::room& room, preview_state state,
                        std::string_view language) const;

    // Compiles one template from text; "" on success, else the mustache error with its
    // line:column. For `waitroomd check` and tests.
    static std::string compile_error(std::string_view text);

    ~page_templates();
    page_templates(const page_templates&) = delete;
    page_templates& operator=(const page_templates&) = delete;

  private:
    friend class page_renderer;
    struct impl;
    page_templates();
    std::unique_ptr<impl> impl_;
};

// What, besides the page model, tells two queued visitors apart. Visitors of the same room with
// the same key are expected to get the same model; the cache still compares the whole model, so
// a differing one is re-rendered (correct, only slower).
struct page_key {
    std::uint64_t state_version = 0;  // version of the room-state snapshot the model came from
    std::uint64_t band = 0;           // the visitor's arrival bucket or position band
};

// One per worker thread: NOT thread-safe, by design (no locks on the request path).
class page_renderer {
  public:
    static constexpr std::size_t default_cache_slots = 1024;

    explicit page_renderer(std::shared_ptr<const page_templates> templates,
                           std::size_t cache_slots = default_cache_slots);
    ~page_renderer();
    page_renderer(const page_renderer&) = delete;
    page_renderer& operator=(const page_renderer&) = delete;

    // Swaps in the templates of a new config snapshot and empties the cache.
    void set_templates(std::shared_ptr<const page_templates> templates);

    // The queue page (HTML) of a room. `event_name` is the running event ("" for none): its
    // custom_page_html wins over the room's. An unknown room gets the en-US default page.
    // Never null.
    page_body queue_page(std::string_view room_id, std::string_view event_name, const page_key& key,
                         const room::page_model& model);

    // The reject page: the room's custom template when it has one (isRejectQueue is true in the
    // model), else the built-in static page in the room's language. Never null.
    page_body reject_page(std::string_view room_id, const page_key& key,
                          const room::page_model& model);

    // `{"cfWaitingRoom": {...}}`, cached like the pages. Never null.
    page_body json(std::string_view room_id, const page_key& key, const room::page_model& model);

    struct cache_stats {
        std::uint64_t hits = 0;
        std::uint64_t misses = 0;
        std::size_t entries = 0;  // pages held now
    };
    cache_stats stats() const;

  private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

// Uncached renderings, also used by the cache on a miss.
std::string render_json(const room::page_model& model);

// Minutes as words in a built-in language ("1 Stunde 5 Minuten", "1時間5分"); en-US otherwise.
std::string format_minutes_in(std::string_view language, std::int64_t minutes);

// A wait as the built-in page shows it: under 10 minutes from waitTimeSeconds ("1 minute 30
// seconds", "1分30秒"), else (or without seconds) as format_minutes_in(language, minutes).
std::string format_wait_in(std::string_view language, std::int64_t seconds, std::int64_t minutes);

// The default page's progress bar value, 0–100: grows as the position shrinks, on a log scale
// because no start position is kept (no per-visitor state).
int progress_percent(std::int64_t queue_position);

}  // namespace waitroom::pages
