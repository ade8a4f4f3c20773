// Queue page, reject page and JSON rendering: variables, escaping, languages, custom templates,
// config-time errors and the per-worker render cache.

#include "waitroom/pages/page_renderer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>

#include <stdlib.h>

namespace {

using waitroom::config::config;
using waitroom::config::room;
using waitroom::pages::page_key;
using waitroom::pages::page_renderer;
using waitroom::pages::page_templates;
using waitroom::room::page_model;

namespace fs = std::filesystem;

page_model queued_model() {
    page_model m;
    m.room_name = "Shop checkout";
    m.in_waiting_room = true;
    m.queue_position = 42;
    m.wait_time_known = true;
    m.wait_time = 65;
    m.wait_time_formatted = "1 hour 5 minutes";
    m.wait_time_hours = 1;
    m.wait_time_hour_minutes = 5;
    m.wait_time_seconds = 3890;
    m.queue_is_full = true;
    m.last_updated_ms = 1795326000000;
    m.refresh_interval_seconds = 17;
    return m;
}

room make_room(std::string id, std::string language = "en-US", std::string custom = {}) {
    room r;
    r.id = std::move(id);
    r.name = "Room " + r.id;
    r.total_active_users = 10;
    r.new_users_per_minute = 10;
    r.default_template_language = std::move(language);
    r.custom_page_html = std::move(custom);
    return r;
}

std::shared_ptr<const page_templates> load_ok(const config& cfg) {
    auto result = page_templates::load(cfg);
    for (const auto& p : result.problems) {
        ADD_FAILURE() << p.to_string();
    }
    return result.templates;
}

// This run's own folder under the system's temporary folder (mkdtemp: a new name, mode 0700),
// removed when the run ends.
struct scratch_dir {
    fs::path path = [] {
        std::string name =
            (fs::temp_directory_path() / "waitroom-page_renderer_test-XXXXXX").string();
        if (::mkdtemp(name.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed for " + name);
        }
        return fs::path(name);
    }();
    ~scratch_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

// A template file in this run's scratch folder.
std::string write_template(const std::string& name, const std::string& text) {
    static const scratch_dir scratch;
    const fs::path& dir = scratch.path;
    fs::create_directories(dir);
    const auto path = dir / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

TEST(PageRenderer, RendersEveryBuiltInLanguageWithItsValues) {
    config cfg;
    for (const auto lang : page_templates::languages()) {
        cfg.rooms.push_back(make_room(std::string(lang), std::string(lang)));
    }
    page_renderer renderer(load_ok(cfg));
    const auto m = queued_model();
    struct expectation {
        const char* lang;
        const char* text;  // a phrase only that language's page has
        const char* wait;  // waitTimeFormatted in that language
    };
    const expectation cases[] = {
        {"en-US", "People ahead of you", "1 hour 5 minutes"},
        {"de-DE", "Personen vor Ihnen", "1 Stunde 5 Minuten"},
        {"fr-FR", "Personnes devant vous", "1 heure 5 minutes"},
        {"ja-JP", "前にいる人数", "1時間5分"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.lang);
        const auto page = renderer.queue_page(c.lang, "", page_key{1, 1}, m)->identity;
        EXPECT_TRUE(contains(page, std::string("<html lang=\"") + c.lang + "\">"));
        EXPECT_TRUE(contains(page, c.text));
        EXPECT_TRUE(contains(page, c.wait));
        EXPECT_TRUE(contains(page, "<dd>42</dd>"));
        EXPECT_TRUE(contains(page, "Shop checkout"));
        // The Refresh header reloads the page; a meta refresh would fail axe-core (WCAG 2.2.1).
        EXPECT_FALSE(contains(page, "http-equiv=\"refresh\""));
        EXPECT_TRUE(contains(page, "aria-live=\"polite\""));
        EXPECT_TRUE(contains(page, "prefers-reduced-motion"));
        EXPECT_TRUE(contains(page, "<progress id=\"progress\" max=\"100\" value=\"59\">"));
        EXPECT_TRUE(contains(page, ">17</span>"));  // countdown starts at the refresh interval
        EXPECT_FALSE(contains(page, "{{"));
        EXPECT_FALSE(contains(page, "http://"));  // self-contained: no external resources
        EXPECT_FALSE(contains(page, "https://"));
    }
}

// A short wait shows to 10 s on every built-in page (whole minutes read a 90 s wait as 1 or
// 2 minutes); waitTimeFormatted, Cloudflare's, stays in whole minutes for custom templates.
TEST(PageRenderer, BuiltInPagesShowAShortWaitToTenSeconds) {
    config cfg;
    for (const auto lang : page_templates::languages()) {
        cfg.rooms.push_back(make_room(std::string(lang), std::string(lang)));
    }
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.wait_time = 2;
    m.wait_time_seconds = 90;
    m.wait_time_formatted = "2 minutes";
    m.wait_time_hours = 0;
    m.wait_time_hour_minutes = 2;
    const std::pair<const char*, const char*> cases[] = {
        {"en-US", "<dd>1 minute 30 seconds</dd>"},
        {"de-DE", "<dd>1 Minute 30 Sekunden</dd>"},
        {"fr-FR", "<dd>1 minute 30 secondes</dd>"},
        {"ja-JP", "<dd>1分30秒</dd>"},
    };
    for (const auto& [lang, shown] : cases) {
        SCOPED_TRACE(lang);
        const auto page = renderer.queue_page(lang, "", page_key{1, 1}, m)->identity;
        EXPECT_TRUE(contains(page, shown));
    }
    cfg.rooms[0].custom_page_html =
        write_template("short.html",
                       "{{waitTime}}|{{waitTimeFormatted}}|{{waitTimeSeconds}}|"
                       "{{waitTimeSecondsFormatted}}");
    renderer.set_templates(load_ok(cfg));
    EXPECT_EQ(renderer.queue_page(cfg.rooms[0].id, "", page_key{1, 1}, m)->identity,
              "2|2 minutes|90|1 minute 30 seconds");
}

TEST(PageRenderer, UnknownLanguageFallsBackToEnglishAndSubtagsMatch) {
    EXPECT_EQ(page_templates::resolve_language("xx-YY"), "en-US");
    EXPECT_EQ(page_templates::resolve_language(""), "en-US");
    EXPECT_EQ(page_templates::resolve_language("de-AT"), "de-DE");
    EXPECT_EQ(page_templates::resolve_language("JA-jp"), "ja-JP");
    EXPECT_EQ(page_templates::resolve_language("fr"), "fr-FR");

    config cfg;
    cfg.rooms.push_back(make_room("klingon", "tlh-001"));
    page_renderer renderer(load_ok(cfg));
    const auto page = renderer.queue_page("klingon", "", page_key{}, queued_model())->identity;
    EXPECT_TRUE(contains(page, "<html lang=\"en-US\">"));
    EXPECT_TRUE(contains(page, "People ahead of you"));
}

TEST(PageRenderer, EscapesRoomNameWithScriptTag) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.room_name = "<script>alert(\"x\")</script> & co";
    const auto page = renderer.queue_page("shop", "", page_key{}, m)->identity;
    EXPECT_FALSE(contains(page, "<script>alert"));
    EXPECT_TRUE(contains(page, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co"));
}

// A partial names nothing: mustache would render the value it names as a template, so a room
// name that names itself under a page that includes it recursed until the stack ran out (found
// by the page_render fuzzer), and model text would run as a template.
TEST(PageRenderer, APartialRendersNothingAndNeverRunsModelTextAsATemplate) {
    config cfg;
    cfg.rooms.push_back(
        make_room("shop", "en-US", write_template("partial.html", "[{{>roomName}}] {{roomName}}")));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.room_name = "{{>roomName}}";
    const auto page = renderer.queue_page("shop", "", page_key{}, m)->identity;
    EXPECT_EQ(page, "[] {{&gt;roomName}}");
}

TEST(PageRenderer, BooleanSectionsFollowTheModel) {
    const auto path = write_template(
        "sections.html",
        "{{#waitTimeKnown}}known {{waitTime}}{{/waitTimeKnown}}"
        "{{^waitTimeKnown}}unknown{{/waitTimeKnown}}|"
        "{{#isFIFOQueue}}fifo{{/isFIFOQueue}}{{#isRandomQueue}}random{{/isRandomQueue}}|"
        "{{#queueAll}}all{{/queueAll}}|{{#isEventPrequeueing}}pre{{/isEventPrequeueing}}");
    config cfg;
    cfg.rooms.push_back(make_room("shop", "en-US", path));
    page_renderer renderer(load_ok(cfg));

    auto m = queued_model();
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{1, 1}, m)->identity, "known 65|fifo||");

    m.wait_time_known = false;
    m.is_fifo_queue = false;
    m.is_random_queue = true;
    m.queue_all = true;
    m.is_event_prequeueing = true;
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{1, 1}, m)->identity,
              "unknown|random|all|pre");
}

TEST(PageRenderer, DefaultPageShowsPausedTextWhenWaitIsUnknown) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.wait_time_known = false;
    m.queue_all = true;
    const auto page = renderer.queue_page("shop", "", page_key{}, m)->identity;
    EXPECT_TRUE(contains(page, "Not yet known"));
    EXPECT_TRUE(contains(page, "Entry is paused"));
    EXPECT_FALSE(contains(page, "1 hour 5 minutes"));
}

// A template may change its delimiters ({{=<% %>=}}): booleans print under the delimiters in
// force, and a boolean's name inside a set-delimiter tag is a delimiter, not a tag to rename (the
// rename made such a template invalid, so it rendered nothing: found by the page_render fuzzer).
TEST(PageRenderer, BooleansPrintUnderChangedDelimitersAndSetDelimiterTagsStayIntact) {
    const auto path = write_template(
        "delimiters.html",
        "A{{queueAll}}{{=<% %>=}}|<% queueIsFull %>|<%={{ }}=%>{{inWaitingRoom}}|"
        "{{=<% %>=}}<%={{ queueAll}}=%>{{ roomName queueAll}}|{{={{ }}=queueAll}}{{{queueAll}}}B");
    ASSERT_EQ(page_templates::compile_error(read_file(path)), "");
    config cfg;
    cfg.rooms.push_back(make_room("shop", "en-US", path));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.queue_all = true;
    m.queue_is_full = false;
    // Then the delimiters are "{{" and "queueAll}}": the tag "{{ roomName queueAll}}" prints the
    // room's name, and "{{={{ }}=queueAll}}" sets the default ones again, under which a
    // triple-brace boolean prints nothing (as in kainjow).
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{1, 1}, m)->identity,
              "Atrue|false|true|Shop checkout|B");
}

TEST(PageRenderer, TabTitleShowsThePositionOfAFifoQueueOnly) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    cfg.rooms.push_back(make_room("laden", "de-DE"));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    EXPECT_TRUE(contains(renderer.queue_page("shop", "", page_key{1, 1}, m)->identity,
                         "<title>(42) You are in line – Shop checkout</title>"));
    EXPECT_TRUE(contains(renderer.queue_page("laden", "", page_key{1, 1}, m)->identity,
                         "<title>(42) Sie sind in der Warteschlange – Shop checkout</title>"));
    // A random queue has no order to show.
    m.queueing_method = "random";
    m.is_fifo_queue = false;
    m.is_random_queue = true;
    EXPECT_TRUE(contains(renderer.queue_page("shop", "", page_key{1, 2}, m)->identity,
                         "<title>You are in line – Shop checkout</title>"));
}

TEST(PageRenderer, BuiltInQueuePagesCarryTheSharedStyleAndScript) {
    config cfg;
    for (const auto lang : page_templates::languages()) {
        cfg.rooms.push_back(make_room(std::string(lang), std::string(lang)));
    }
    page_renderer renderer(load_ok(cfg));
    for (const auto lang : page_templates::languages()) {
        SCOPED_TRACE(lang);
        const auto page = renderer.queue_page(lang, "", page_key{1, 1}, queued_model())->identity;
        EXPECT_FALSE(contains(page, "{{! include"));
        EXPECT_TRUE(contains(page, "--font: system-ui"));               // page.css
        EXPECT_TRUE(contains(page, "Notification.requestPermission"));  // queue-page.js
        EXPECT_TRUE(contains(page, "id=\"announce\" class=\"visually-hidden\" role=\"status\""));
        EXPECT_TRUE(contains(page, "<button type=\"button\" id=\"notify\""));
        EXPECT_TRUE(contains(page, "data-title-turn=\""));
    }
}

TEST(PageRenderer, AdmissionSoundIsOffUnlessTheRoomTurnsItOn) {
    const auto path = write_template("sound.html",
                                     "{{admissionSoundEnabled}}|"
                                     "{{#admissionSoundEnabled}}beep{{/admissionSoundEnabled}}");
    config cfg;
    cfg.rooms.push_back(make_room("quiet"));
    cfg.rooms.push_back(make_room("loud"));
    cfg.rooms.back().admission_sound_enabled = true;
    cfg.rooms.push_back(make_room("custom-quiet", "en-US", path));
    cfg.rooms.push_back(make_room("custom-loud", "en-US", path));
    cfg.rooms.back().admission_sound_enabled = true;
    page_renderer renderer(load_ok(cfg));
    const auto m = queued_model();
    EXPECT_TRUE(
        contains(renderer.queue_page("quiet", "", page_key{1, 1}, m)->identity, "data-sound=\"\""));
    EXPECT_TRUE(contains(renderer.queue_page("loud", "", page_key{1, 1}, m)->identity,
                         "data-sound=\"on\""));
    EXPECT_EQ(renderer.queue_page("custom-quiet", "", page_key{1, 1}, m)->identity, "false|");
    EXPECT_EQ(renderer.queue_page("custom-loud", "", page_key{1, 1}, m)->identity, "true|beep");
}

TEST(PagePreview, ShowsTheRoomsBuiltInPageInTheAskedLanguageWithSampleValues) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    cfg.rooms.back().refresh_interval = std::chrono::seconds{25};
    const auto templates = load_ok(cfg);
    const room& shop = cfg.rooms[0];
    using waitroom::pages::preview_state;
    struct expectation {
        const char* lang;
        const char* title;
        const char* wait;
        const char* event;  // the time to the event's start
        const char* reject;
    };
    for (const auto& c : {
             expectation{"", "(137) You are in line – Room shop", "12 minutes", "1 hour 35 minutes",
                         "not available"},
             expectation{"en-US", "(137) You are in line – Room shop", "12 minutes",
                         "1 hour 35 minutes", "not available"},
             expectation{"de-DE", "(137) Sie sind in der Warteschlange – Room shop", "12 Minuten",
                         "1 Stunde 35 Minuten", "nicht verfügbar"},
             expectation{"fr-FR", "(137) Vous êtes dans la file d’attente – Room shop",
                         "12 minutes", "1 heure 35 minutes", "pas disponible"},
             expectation{"ja-JP", "(137) 順番待ちをしています – Room shop", "12分", "1時間35分",
                         "ご利用いただけません"},
         }) {
        SCOPED_TRACE(c.lang);
        const auto queued = templates->preview(shop, preview_state::queued, c.lang);
        EXPECT_TRUE(contains(queued, std::string("<title>") + c.title + "</title>"));
        EXPECT_TRUE(contains(queued, std::string("<dd>") + c.wait + "</dd>"));
        EXPECT_TRUE(contains(queued, "<dd>137</dd>"));
        EXPECT_TRUE(contains(queued, ">25</span>"));  // the countdown: the room's interval
        const auto event = templates->preview(shop, preview_state::event, c.lang);
        EXPECT_TRUE(contains(event, c.event));
        const auto reject = templates->preview(shop, preview_state::reject, c.lang);
        EXPECT_TRUE(contains(reject, c.reject));
        EXPECT_TRUE(contains(reject, "Room shop"));
    }
    // The same call, the same page: no clock or room state reaches a preview.
    EXPECT_EQ(templates->preview(shop, preview_state::queued, "de-DE"),
              templates->preview(shop, preview_state::queued, "de-DE"));
}

TEST(PagePreview, EventPreviewSaysHowTheEventLetsVisitorsIn) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    waitroom::config::event ev;
    ev.name = "launch";
    ev.shuffle_at_event_start = true;
    cfg.rooms.back().events.push_back(ev);
    const auto templates = load_ok(cfg);
    const auto page =
        templates->preview(cfg.rooms[0], waitroom::pages::preview_state::event, "en-US");
    EXPECT_TRUE(contains(page, "You are in line for the event"));
    EXPECT_TRUE(contains(page, "The event starts in 1 hour 35 minutes"));
    EXPECT_TRUE(contains(page, "in a random order"));
}

TEST(PagePreview, ShowsTheRoomsCustomTemplatesWithEscapedValues) {
    const auto queue = write_template("preview.html",
                                      "{{roomName}}|{{queuePosition}}|"
                                      "{{isRejectQueue}}|{{isEventPrequeueing}}");
    const auto event = write_template("preview-event.html", "event:{{roomName}}");
    config cfg;
    cfg.rooms.push_back(make_room("shop", "en-US", queue));
    cfg.rooms.back().name = "<script>alert(1)</script>";
    waitroom::config::event ev;
    ev.name = "launch";
    ev.custom_page_html = event;
    cfg.rooms.back().events.push_back(ev);
    const auto templates = load_ok(cfg);
    using waitroom::pages::preview_state;
    const room& shop = cfg.rooms[0];
    const std::string name = "&lt;script&gt;alert(1)&lt;/script&gt;";
    EXPECT_EQ(templates->preview(shop, preview_state::queued, "de-DE"), name + "|137|false|false");
    EXPECT_EQ(templates->preview(shop, preview_state::reject, ""), name + "|0|true|false");
    EXPECT_EQ(templates->preview(shop, preview_state::event, ""), "event:" + name);
}

TEST(PageRenderer, CustomTemplateGetsEveryCloudflareVariable) {
    const auto path = write_template(
        "all.html",
        "{{inWaitingRoom}}|{{waitTimeKnown}}|{{waitTime}}|{{waitTimeFormatted}}|"
        "{{waitTimeHours}}|{{waitTimeHourMinutes}}|{{waitTime25Percentile}}|"
        "{{waitTime50Percentile}}|{{waitTime75Percentile}}|{{queueIsFull}}|{{queueAll}}|"
        "{{lastUpdated}}|{{refreshIntervalSeconds}}|{{queueingMethod}}|{{isFIFOQueue}}|"
        "{{isRandomQueue}}|{{isPassthroughQueue}}|{{isRejectQueue}}|{{isEventActive}}|"
        "{{isEventPrequeueing}}|{{timeUntilEventStart}}|{{timeUntilEventStartFormatted}}|"
        "{{timeUntilEventEnd}}|{{timeUntilEventEndFormatted}}|{{shuffleAtEventStart}}|"
        "{{queuePosition}}|{{roomName}}");
    config cfg;
    // A custom template keeps the model's (English) formatted values whatever the language.
    cfg.rooms.push_back(make_room("shop", "de-DE", path));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.wait_time_25_percentile = 3;
    m.wait_time_50_percentile = 6;
    m.wait_time_75_percentile = 9;
    m.is_event_active = true;
    m.time_until_event_end = 30;
    m.time_until_event_end_formatted = "30 minutes";
    m.shuffle_at_event_start = true;
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{}, m)->identity,
              "true|true|65|1 hour 5 minutes|1|5|3|6|9|true|false|2026-11-22T05:40:00Z|17|fifo|"
              "true|false|false|false|true|false|0||30|30 minutes|true|42|Shop checkout");
}

TEST(PageRenderer, EventTemplateWinsWhileItsEventRuns) {
    config cfg;
    auto r = make_room("shop", "en-US", write_template("room.html", "room page"));
    waitroom::config::event ev;
    ev.name = "launch";
    ev.custom_page_html = write_template("event.html", "event page {{roomName}}");
    r.events.push_back(ev);
    cfg.rooms.push_back(r);
    page_renderer renderer(load_ok(cfg));
    const auto m = queued_model();
    EXPECT_EQ(renderer.queue_page("shop", "launch", page_key{}, m)->identity,
              "event page Shop checkout");
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{}, m)->identity, "room page");
    EXPECT_EQ(renderer.queue_page("shop", "other", page_key{}, m)->identity, "room page");
}

TEST(PageRenderer, TemplateThatDoesNotCompileIsAConfigErrorWithItsPlace) {
    const auto path = write_template("broken.html", "<p>\n  {{#waitTimeKnown}}open\n</p>\n");
    config cfg;
    cfg.rooms.push_back(make_room("ok"));
    cfg.rooms.push_back(make_room("shop", "en-US", path));
    const auto result = page_templates::load(cfg);
    EXPECT_FALSE(result.ok());
    ASSERT_EQ(result.problems.size(), 1u);
    const auto& p = result.problems[0];
    EXPECT_EQ(p.file, path);
    EXPECT_EQ(p.path, "rooms[1].custom_page_html");
    EXPECT_EQ(p.line, 2);
    EXPECT_EQ(p.column, 3);
    EXPECT_TRUE(contains(p.message, "Unclosed section \"waitTimeKnown\"")) << p.message;

    EXPECT_EQ(page_templates::compile_error("x\n {{/b}}"), "2:2: Unopened section \"b\"");
    EXPECT_EQ(page_templates::compile_error("{{#a}}x{{/a}}"), "");
}

TEST(PageRenderer, MissingTemplateFileIsAConfigError) {
    config cfg;
    cfg.rooms.push_back(make_room("shop", "en-US", "/nonexistent/waitroom/page.html"));
    const auto result = page_templates::load(cfg);
    EXPECT_FALSE(result.ok());
    ASSERT_EQ(result.problems.size(), 1u);
    EXPECT_EQ(result.problems[0].path, "rooms[0].custom_page_html");
    EXPECT_TRUE(contains(result.problems[0].message, "cannot read template file"));
}

TEST(PageRenderer, JsonHasCloudflareFieldNamesAndTypes) {
    auto m = queued_model();
    m.queueing_method = "random";
    m.is_fifo_queue = false;
    m.is_random_queue = true;
    const auto j = nlohmann::json::parse(waitroom::pages::render_json(m));
    ASSERT_TRUE(j.contains("cfWaitingRoom"));
    ASSERT_EQ(j.size(), 1u);
    const auto& w = j["cfWaitingRoom"];
    const char* booleans[] = {"inWaitingRoom",      "waitTimeKnown",      "queueIsFull",
                              "queueAll",           "isFIFOQueue",        "isRandomQueue",
                              "isPassthroughQueue", "isRejectQueue",      "isEventActive",
                              "isEventPrequeueing", "shuffleAtEventStart"};
    const char* numbers[] = {"waitTime",
                             "waitTimeHours",
                             "waitTimeHourMinutes",
                             "waitTime25Percentile",
                             "waitTime50Percentile",
                             "waitTime75Percentile",
                             "refreshIntervalSeconds",
                             "timeUntilEventStart",
                             "timeUntilEventEnd",
                             "queuePosition",
                             "waitTimeSeconds"};
    const char* strings[] = {"waitTimeFormatted",
                             "lastUpdated",
                             "queueingMethod",
                             "timeUntilEventStartFormatted",
                             "timeUntilEventEndFormatted",
                             "roomName"};
    for (const auto* k : booleans) {
        EXPECT_TRUE(w.contains(k) && w[k].is_boolean()) << k;
    }
    for (const auto* k : numbers) {
        EXPECT_TRUE(w.contains(k) && w[k].is_number_integer()) << k;
    }
    for (const auto* k : strings) {
        EXPECT_TRUE(w.contains(k) && w[k].is_string()) << k;
    }
    EXPECT_EQ(w.size(), std::size(booleans) + std::size(numbers) + std::size(strings));
    EXPECT_EQ(w["waitTime"], 65);
    EXPECT_EQ(w["queuePosition"], 42);
    EXPECT_EQ(w["waitTimeSeconds"], 3890);
    EXPECT_EQ(w["refreshIntervalSeconds"], 17);
    EXPECT_EQ(w["queueingMethod"], "random");
    EXPECT_EQ(w["isRandomQueue"], true);
    EXPECT_EQ(w["isFIFOQueue"], false);
    EXPECT_EQ(w["waitTimeFormatted"], "1 hour 5 minutes");
    EXPECT_EQ(w["roomName"], "Shop checkout");
}

TEST(PageRenderer, JsonDoesNotThrowOnInvalidUtf8) {
    auto m = queued_model();
    m.room_name = std::string("bad \xff name");
    std::string out;
    EXPECT_NO_THROW(out = waitroom::pages::render_json(m));
    EXPECT_TRUE(nlohmann::json::accept(out));
}

TEST(PageRenderer, RejectPageIsStaticAndLocalized) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    cfg.rooms.push_back(make_room("laden", "de-DE"));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.is_reject_queue = true;
    const auto en = renderer.reject_page("shop", page_key{1, 1}, m);
    EXPECT_TRUE(contains(en->identity, "<html lang=\"en-US\">"));
    EXPECT_TRUE(contains(en->identity, "Room shop"));
    EXPECT_TRUE(contains(en->identity, "try again later"));
    EXPECT_FALSE(contains(en->identity, "http-equiv=\"refresh\""));
    EXPECT_FALSE(contains(en->identity, "countdown"));
    EXPECT_FALSE(contains(en->identity, "<script"));
    // Static: the same bytes whatever the visitor's values.
    m.queue_position = 7;
    EXPECT_EQ(renderer.reject_page("shop", page_key{2, 9}, m), en);

    const auto de = renderer.reject_page("laden", page_key{}, m);
    EXPECT_TRUE(contains(de->identity, "<html lang=\"de-DE\">"));
    EXPECT_TRUE(contains(de->identity, "später"));
}

TEST(PageRenderer, RejectPageUsesTheRoomsCustomTemplate) {
    const auto path = write_template("reject.html",
                                     "{{#isRejectQueue}}closed: {{roomName}}{{/isRejectQueue}}"
                                     "{{^isRejectQueue}}queue{{/isRejectQueue}}");
    config cfg;
    cfg.rooms.push_back(make_room("shop", "en-US", path));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    m.is_reject_queue = true;
    EXPECT_EQ(renderer.reject_page("shop", page_key{}, m)->identity, "closed: Shop checkout");
}

TEST(PageRenderer, UnknownRoomGetsTheEnglishDefaultPage) {
    page_renderer renderer(load_ok(config{}));
    const auto page = renderer.queue_page("nope", "", page_key{}, queued_model())->identity;
    EXPECT_TRUE(contains(page, "<html lang=\"en-US\">"));
    EXPECT_TRUE(contains(page, "<dd>42</dd>"));
    EXPECT_TRUE(contains(renderer.reject_page("nope", page_key{}, queued_model())->identity,
                         "lang=\"en-US\""));
}

TEST(PageRendererCache, HitReturnsTheSameBytes) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    page_renderer renderer(load_ok(cfg));
    const auto m = queued_model();
    const auto first = renderer.queue_page("shop", "", page_key{5, 3}, m);
    const auto second = renderer.queue_page("shop", "", page_key{5, 3}, m);
    EXPECT_EQ(first, second);  // the very same buffer
    EXPECT_EQ(renderer.stats().hits, 1u);
    EXPECT_EQ(renderer.stats().misses, 1u);

    const auto j1 = renderer.json("shop", page_key{5, 3}, m);
    const auto j2 = renderer.json("shop", page_key{5, 3}, m);
    EXPECT_EQ(j1, j2);
    EXPECT_NE(j1->identity, first->identity);  // JSON and HTML do not share a slot
}

TEST(PageRendererCache, NewStateVersionRendersAgain) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    const auto v1 = renderer.queue_page("shop", "", page_key{1, 3}, m);
    m.queue_position = 12;
    m.last_updated_ms += 60000;
    const auto v2 = renderer.queue_page("shop", "", page_key{2, 3}, m);
    EXPECT_NE(v1, v2);
    EXPECT_NE(v1->identity, v2->identity);
    EXPECT_TRUE(contains(v2->identity, "<dd>12</dd>"));
    EXPECT_EQ(renderer.stats().misses, 2u);
    EXPECT_EQ(renderer.stats().hits, 0u);
}

TEST(PageRendererCache, SameKeyWithOtherValuesIsNeverServedStale) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    page_renderer renderer(load_ok(cfg));
    auto m = queued_model();
    const auto a = renderer.queue_page("shop", "", page_key{1, 1}, m);
    m.refresh_interval_seconds = 3;  // adaptive refresh differs inside a band
    const auto b = renderer.queue_page("shop", "", page_key{1, 1}, m);
    EXPECT_NE(a->identity, b->identity);
    EXPECT_TRUE(contains(b->identity, "<span id=\"countdown\">3</span>"));

    const std::string random = "random";  // a view into a string that dies before the next call
    m.queueing_method = random;
    const auto c = renderer.json("shop", page_key{1, 1}, m);
    m.queueing_method = "fifo";
    const auto d = renderer.json("shop", page_key{1, 1}, m);
    EXPECT_TRUE(contains(c->identity, "\"queueingMethod\":\"random\""));
    EXPECT_TRUE(contains(d->identity, "\"queueingMethod\":\"fifo\""));
}

TEST(PageRendererCache, StaysBoundedAndKeepsServingCorrectPages) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    page_renderer renderer(load_ok(cfg), 8);
    auto m = queued_model();
    for (std::uint64_t band = 0; band < 100; ++band) {
        m.queue_position = static_cast<std::int64_t>(band);
        const auto page = renderer.queue_page("shop", "", page_key{1, band}, m);
        EXPECT_TRUE(contains(page->identity, "<dd>" + std::to_string(band) + "</dd>"));
    }
    m.queue_position = 99;
    const auto again = renderer.queue_page("shop", "", page_key{1, 99}, m);
    EXPECT_TRUE(contains(again->identity, "<dd>99</dd>"));
    EXPECT_EQ(renderer.stats().hits, 1u);  // the most recent entry is still cached
}

TEST(PageRendererCache, HoldsOnlyThePagesOfTheLastTwoStateVersions) {
    config cfg;
    cfg.rooms.push_back(make_room("shop"));
    constexpr std::size_t capacity = 1024;
    page_renderer renderer(load_ok(cfg), capacity);
    auto m = queued_model();
    // A sync a second for two minutes, ten queued bands each: more pages than the cache holds,
    // and it never fills with pages whose version is gone. (Kept short: each page is a real
    // render, and an hour of them took 80-120 s under ASan on two cores.)
    constexpr std::uint64_t versions = 120;
    static_assert(versions * 10 > capacity);
    for (std::uint64_t version = 1; version <= versions; ++version) {
        for (std::uint64_t band = 0; band < 10; ++band) {
            m.queue_position = static_cast<std::int64_t>(band);
            renderer.queue_page("shop", "", page_key{version, band}, m);
        }
        ASSERT_LE(renderer.stats().entries, 20u) << version;
    }
    EXPECT_GE(renderer.stats().entries, 10u);
    // The previous version's pages still hit.
    m.queue_position = 4;
    renderer.queue_page("shop", "", page_key{versions + 1, 4}, m);
    const auto hits = renderer.stats().hits;
    renderer.queue_page("shop", "", page_key{versions, 4}, m);
    EXPECT_EQ(renderer.stats().hits, hits + 1);
}

TEST(PageRendererCache, NewTemplatesEmptyTheCache) {
    config cfg;
    cfg.rooms.push_back(make_room("shop", "en-US", write_template("v1.html", "v1")));
    page_renderer renderer(load_ok(cfg));
    const auto m = queued_model();
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{1, 1}, m)->identity, "v1");
    cfg.rooms[0].custom_page_html = write_template("v2.html", "v2");
    renderer.set_templates(load_ok(cfg));
    EXPECT_EQ(renderer.queue_page("shop", "", page_key{1, 1}, m)->identity, "v2");
}

TEST(PageFormatting, FormatsMinutesPerLanguage) {
    using waitroom::pages::format_minutes_in;
    EXPECT_EQ(format_minutes_in("en-US", 1), "1 minute");
    EXPECT_EQ(format_minutes_in("en-US", 120), "2 hours");
    EXPECT_EQ(format_minutes_in("de-DE", 61), "1 Stunde 1 Minute");
    EXPECT_EQ(format_minutes_in("de-DE", 0), "0 Minuten");
    EXPECT_EQ(format_minutes_in("fr-FR", 0), "0 minute");
    EXPECT_EQ(format_minutes_in("fr-FR", 150), "2 heures 30 minutes");
    EXPECT_EQ(format_minutes_in("ja-JP", 125), "2時間5分");
    EXPECT_EQ(format_minutes_in("ja-JP", 60), "1時間");
}

TEST(PageFormatting, FormatsAShortWaitToTheSecondsGivenAndALongOneInMinutes) {
    using waitroom::pages::format_wait_in;
    EXPECT_EQ(format_wait_in("en-US", 90, 2), "1 minute 30 seconds");
    EXPECT_EQ(format_wait_in("en-US", 50, 1), "50 seconds");
    EXPECT_EQ(format_wait_in("en-US", 120, 2), "2 minutes");
    EXPECT_EQ(format_wait_in("de-DE", 10, 1), "10 Sekunden");
    EXPECT_EQ(format_wait_in("fr-FR", 370, 6), "6 minutes 10 secondes");
    EXPECT_EQ(format_wait_in("ja-JP", 70, 1), "1分10秒");
    // From 10 minutes on, and without a seconds estimate, the whole minutes.
    EXPECT_EQ(format_wait_in("en-US", 600, 10), "10 minutes");
    EXPECT_EQ(format_wait_in("de-DE", 3890, 65), "1 Stunde 5 Minuten");
    EXPECT_EQ(format_wait_in("en-US", 0, 3), "3 minutes");
    EXPECT_EQ(format_wait_in("en-US", -20, 3), "3 minutes");
}

TEST(PageFormatting, ProgressGrowsAsThePositionShrinks) {
    using waitroom::pages::progress_percent;
    EXPECT_EQ(progress_percent(0), 100);
    EXPECT_GT(progress_percent(1), progress_percent(10));
    EXPECT_GT(progress_percent(10), progress_percent(1000));
    EXPECT_EQ(progress_percent(99), 50);
    EXPECT_EQ(progress_percent(1'000'000'000), 3);
}

}  // namespace
