// The test origin: C++20 coroutines on one io_context and one thread. Test code, so exceptions
// are allowed here, but every I/O uses as_tuple so a peer going away is a normal event.
#include "support/test_origin.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <charconv>
#include <future>
#include <map>
#include <set>
#include <thread>

namespace waitroom::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t piece_size = 16 * 1024;

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string percent_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            unsigned v = 0;
            auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
            if (ec == std::errc{} && p == s.data() + i + 3) {
                out.push_back(static_cast<char>(v));
                i += 2;
                continue;
            }
        }
        out.push_back(s[i] == '+' ? ' ' : s[i]);
    }
    return out;
}

struct parsed_target {
    std::string path;
    std::vector<std::pair<std::string, std::string>> query;

    std::optional<std::uint64_t> number(std::string_view key) const {
        for (const auto& [k, v] : query) {
            if (k == key) {
                std::uint64_t n = 0;
                auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                if (ec == std::errc{}) {
                    return n;
                }
            }
        }
        return std::nullopt;
    }
};

parsed_target parse_target(std::string_view target) {
    parsed_target t;
    auto q = target.find('?');
    t.path = std::string(target.substr(0, q));
    if (q == std::string_view::npos) {
        return t;
    }
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        auto amp = rest.find('&');
        std::string_view kv = rest.substr(0, amp);
        auto eq = kv.find('=');
        t.query.emplace_back(percent_decode(kv.substr(0, eq)),
                             eq == std::string_view::npos ? "" : percent_decode(kv.substr(eq + 1)));
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    }
    return t;
}

const std::string& pattern() {
    static const std::string p = [] {
        std::string s(piece_size, 'a');
        for (std::size_t i = 0; i < s.size(); ++i) {
            s[i] = static_cast<char>('a' + i % 26);
        }
        return s;
    }();
    return p;
}

struct connection {
    explicit connection(tcp::socket s) : stream(std::move(s)) {}
    beast::tcp_stream stream;
    bool idle = true;
    bool close_when_idle = false;  // set by close_idle_connections while a request is in hand
};

}  // namespace

std::optional<std::string> recorded_request::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (iequals(k, name)) {
            return v;
        }
    }
    return std::nullopt;
}

std::size_t recorded_request::count(std::string_view name) const {
    return static_cast<std::size_t>(std::count_if(
        headers.begin(), headers.end(), [&](const auto& kv) { return iequals(kv.first, name); }));
}

struct test_origin::impl {
    asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::thread thread;
    std::uint16_t port = 0;
    std::atomic<std::size_t> connections{0};
    std::atomic<std::size_t> requests{0};
    std::atomic<unsigned> health{200};
    std::atomic<std::int64_t> hello_delay_ms{0};
    mutable std::mutex mu;
    recorded_request last;
    std::map<std::string, std::size_t, std::less<>> by_path;
    std::set<std::shared_ptr<connection>> open;  // io thread only
    bool stopped = false;

    using request_parser = http::request_parser<http::buffer_body>;

    void record(const request_parser& p) {
        recorded_request r;
        const auto& req = p.get();
        r.method = std::string(req.method_string());
        r.target = std::string(req.target());
        r.version = req.version();
        for (const auto& f : req) {
            r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
        }
        std::lock_guard lock(mu);
        ++by_path[r.target.substr(0, r.target.find('?'))];
        last = std::move(r);
    }

    void add_body_bytes(std::uint64_t n) {
        std::lock_guard lock(mu);
        last.body_bytes += n;
    }

    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, sock] = co_await acceptor.async_accept(nothrow);
            if (ec == asio::error::operation_aborted || !acceptor.is_open()) {
                co_return;
            }
            if (ec) {
                continue;
            }
            ++connections;
            auto c = std::make_shared<connection>(std::move(sock));
            open.insert(c);
            asio::co_spawn(ioc, serve(c), asio::detached);
        }
    }

    // Reads the rest of the request body, handing each piece to `sink`. False on error.
    template <class Sink>
    asio::awaitable<bool> read_body(connection& c, beast::flat_buffer& buf, request_parser& p,
                                    Sink&& sink) {
        char tmp[piece_size];
        while (!p.is_done()) {
            p.get().body().data = tmp;
            p.get().body().size = sizeof tmp;
            auto [ec, n] = co_await http::async_read(c.stream, buf, p, nothrow);
            if (ec == http::error::need_buffer) {
                ec = {};
            }
            if (ec) {
                co_return false;
            }
            std::size_t got = sizeof tmp - p.get().body().size;
            add_body_bytes(got);
            if (!co_await sink(tmp, got)) {
                co_return false;
            }
        }
        co_return true;
    }

    asio::awaitable<bool> discard_body(connection& c, beast::flat_buffer& buf, request_parser& p) {
        co_return co_await read_body(
            c, buf, p, [](const char*, std::size_t) -> asio::awaitable<bool> { co_return true; });
    }

    // A whole response from memory; HEAD gets the headers only.
    asio::awaitable<bool> send(connection& c, const request_parser& p, http::status status,
                               std::string body,
                               const std::vector<std::pair<std::string, std::string>>& extra = {}) {
        const auto& req = p.get();
        http::response<http::string_body> res{status, req.version()};
        res.set(http::field::server, "waitroom-test-origin");
        res.set(http::field::content_type, "text/plain");
        for (const auto& [k, v] : extra) {
            res.insert(k, v);
        }
        res.keep_alive(req.keep_alive());
        if (req.method() == http::verb::head) {
            res.content_length(body.size());
            http::response<http::empty_body> head{res.base()};
            auto [ec, n] = co_await http::async_write(c.stream, head, nothrow);
            co_return !ec;
        }
        res.body() = std::move(body);
        res.prepare_payload();
        auto [ec, n] = co_await http::async_write(c.stream, res, nothrow);
        co_return !ec;
    }

    asio::awaitable<bool> echo(connection& c, beast::flat_buffer& buf, request_parser& p) {
        const auto& req = p.get();
        http::response<http::buffer_body> res{http::status::ok, req.version()};
        res.set(http::field::content_type, req[http::field::content_type].empty()
                                               ? "application/octet-stream"
                                               : req[http::field::content_type]);
        res.keep_alive(req.keep_alive());
        if (auto cl = p.content_length()) {
            res.content_length(*cl);
        } else {
            res.chunked(true);
        }
        res.body().data = nullptr;
        res.body().more = true;
        http::response_serializer<http::buffer_body> sr{res};
        auto [hec, hn] = co_await http::async_write_header(c.stream, sr, nothrow);
        if (hec) {
            co_return false;
        }
        bool ok = co_await read_body(
            c, buf, p, [&](const char* data, std::size_t n) -> asio::awaitable<bool> {
                if (n == 0) {
                    co_return true;
                }
                res.body().data = const_cast<char*>(data);
                res.body().size = n;
                res.body().more = true;
                auto [ec, w] = co_await http::async_write(c.stream, sr, nothrow);
                co_return !ec || ec == http::error::need_buffer;
            });
        if (!ok) {
            co_return false;
        }
        res.body().data = nullptr;
        res.body().size = 0;
        res.body().more = false;
        auto [ec, w] = co_await http::async_write(c.stream, sr, nothrow);
        co_return !ec;
    }

    asio::awaitable<bool> bytes(connection& c, const request_parser& p, std::uint64_t n) {
        const auto& req = p.get();
        http::response<http::buffer_body> res{http::status::ok, req.version()};
        res.set(http::field::content_type, "application/octet-stream");
        res.keep_alive(req.keep_alive());
        res.content_length(n);
        if (req.method() == http::verb::head) {
            http::response<http::empty_body> head{res.base()};
            auto [ec, w] = co_await http::async_write(c.stream, head, nothrow);
            co_return !ec;
        }
        res.body().data = nullptr;
        res.body().more = true;
        http::response_serializer<http::buffer_body> sr{res};
        auto [hec, hn] = co_await http::async_write_header(c.stream, sr, nothrow);
        if (hec) {
            co_return false;
        }
        std::uint64_t left = n;
        while (left > 0) {
            std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(left, piece_size));
            left -= piece;
            res.body().data = const_cast<char*>(pattern().data());
            res.body().size = piece;
            res.body().more = left > 0;
            auto [ec, w] = co_await http::async_write(c.stream, sr, nothrow);
            if (ec && ec != http::error::need_buffer) {
                co_return false;
            }
        }
        if (!sr.is_done()) {
            res.body().data = nullptr;
            res.body().size = 0;
            res.body().more = false;
            auto [ec, w] = co_await http::async_write(c.stream, sr, nothrow);
            co_return !ec;
        }
        co_return true;
    }

    asio::awaitable<bool> chunked(connection& c, const request_parser& p) {
        const auto& req = p.get();
        http::response<http::buffer_body> res{http::status::ok, req.version()};
        res.set(http::field::content_type, "text/plain");
        res.keep_alive(req.keep_alive());
        res.chunked(true);
        res.body().data = nullptr;
        res.body().more = true;
        http::response_serializer<http::buffer_body> sr{res};
        auto [hec, hn] = co_await http::async_write_header(c.stream, sr, nothrow);
        if (hec) {
            co_return false;
        }
        for (int i = 0; i <= 5; ++i) {
            std::string piece = "chunk-" + std::to_string(i) + "\n";
            res.body().data = i < 5 ? piece.data() : nullptr;
            res.body().size = i < 5 ? piece.size() : 0;
            res.body().more = i < 5;
            auto [ec, w] = co_await http::async_write(c.stream, sr, nothrow);
            if (ec && ec != http::error::need_buffer) {
                co_return false;
            }
        }
        co_return true;
    }

    asio::awaitable<void> websocket_echo(std::shared_ptr<connection> c, request_parser& p) {
        http::request<http::empty_body> req{p.get().base()};
        websocket::stream<beast::tcp_stream> ws{std::move(c->stream)};
        open.erase(c);
        auto [aec] = co_await ws.async_accept(req, nothrow);
        if (aec) {
            co_return;
        }
        beast::flat_buffer buf;
        for (;;) {
            auto [rec, n] = co_await ws.async_read(buf, nothrow);
            if (rec) {
                co_return;
            }
            ws.text(ws.got_text());
            auto [wec, w] = co_await ws.async_write(buf.data(), nothrow);
            if (wec) {
                co_return;
            }
            buf.consume(buf.size());
        }
    }

    // One request; false when the connection must close.
    asio::awaitable<bool> handle(std::shared_ptr<connection> c, beast::flat_buffer& buf,
                                 request_parser& p) {
        const auto& req = p.get();
        auto t = parse_target(req.target());

        if (iequals(req[http::field::expect], "100-continue") && !p.is_done()) {
            http::response<http::empty_body> cont{http::status::continue_, req.version()};
            auto [ec, n] = co_await http::async_write(c->stream, cont, nothrow);
            if (ec) {
                co_return false;
            }
        }
        if (t.path == "/drop") {
            co_return false;
        }
        if (t.path == "/early-hints") {
            // `n` interim 103 responses, then the answer, all in one write (with `close=1`, no
            // answer: the connection closes instead).
            std::string out;
            for (auto i = t.number("n").value_or(1); i > 0; --i) {
                out += "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
            }
            if (t.number("close").value_or(0) != 0) {
                // Dies right after its hints: the FIN leaves right behind them.
                co_await asio::async_write(c->stream, asio::buffer(out), nothrow);
                beast::error_code ignored;
                c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
                co_return false;
            }
            out += "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhinted";
            auto [ec, n] = co_await asio::async_write(c->stream, asio::buffer(out), nothrow);
            co_return !ec;
        }
        if (t.path == "/until-close") {
            // A body delimited by the end of the connection, its FIN sent right behind it.
            static constexpr std::string_view answer =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
                "body until close\n";
            co_await asio::async_write(c->stream, asio::buffer(answer), nothrow);
            beast::error_code ignored;
            c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
            co_return false;
        }
        if (t.path == "/ws" && websocket::is_upgrade(req)) {
            co_await websocket_echo(c, p);
            co_return false;
        }
        if (t.path == "/echo") {
            co_return co_await echo(*c, buf, p);
        }
        if (t.path == "/sink") {
            std::uint64_t total = 0;
            bool ok = co_await read_body(*c, buf, p,
                                         [&](const char*, std::size_t n) -> asio::awaitable<bool> {
                                             total += n;
                                             co_return true;
                                         });
            if (!ok) {
                co_return false;
            }
            co_return co_await send(*c, p, http::status::ok, std::to_string(total));
        }
        if (!co_await discard_body(*c, buf, p)) {
            co_return false;
        }
        if (t.path == "/hello") {
            if (const auto ms = hello_delay_ms.load(); ms > 0) {
                asio::steady_timer timer{co_await asio::this_coro::executor};
                timer.expires_after(std::chrono::milliseconds(ms));
                co_await timer.async_wait(nothrow);
            }
            co_return co_await send(*c, p, http::status::ok, "hello, world\n");
        }
        if (t.path == "/healthz") {
            co_return co_await send(*c, p, http::int_to_status(health.load()), "");
        }
        if (t.path == "/bytes") {
            co_return co_await bytes(*c, p, t.number("n").value_or(1024));
        }
        if (t.path == "/chunked") {
            co_return co_await chunked(*c, p);
        }
        if (t.path == "/slow") {
            asio::steady_timer timer{co_await asio::this_coro::executor};
            timer.expires_after(std::chrono::milliseconds(t.number("ms").value_or(1000)));
            co_await timer.async_wait(nothrow);
            co_return co_await send(*c, p, http::status::ok, "slow\n");
        }
        if (t.path == "/status") {
            auto code = static_cast<unsigned>(t.number("code").value_or(200));
            co_return co_await send(*c, p, http::int_to_status(code), "");
        }
        if (t.path == "/headers") {
            co_return co_await send(*c, p, http::status::ok, "ok\n", t.query);
        }
        co_return co_await send(*c, p, http::status::not_found, "not found\n");
    }

    asio::awaitable<void> serve(std::shared_ptr<connection> c) {
        beast::flat_buffer buf;
        for (;;) {
            c->idle = true;
            if (c->close_when_idle) {
                break;
            }
            request_parser p;
            p.header_limit(64 * 1024);
            p.body_limit(boost::none);
            auto [ec, n] = co_await http::async_read_header(c->stream, buf, p, nothrow);
            if (ec) {
                break;
            }
            c->idle = false;
            ++requests;
            record(p);
            bool keep = co_await handle(c, buf, p);
            if (!keep || !p.get().keep_alive()) {
                break;
            }
        }
        if (open.erase(c) > 0) {
            beast::error_code ignored;
            c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
            c->stream.socket().close(ignored);
        }
    }
};

test_origin::test_origin() : test_origin(0) {}

test_origin::test_origin(std::uint16_t port) : impl_(std::make_unique<impl>()) {
    tcp::endpoint ep{asio::ip::make_address("127.0.0.1"), port};
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(asio::socket_base::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    impl_->port = impl_->acceptor.local_endpoint().port();
    asio::co_spawn(impl_->ioc, impl_->accept_loop(), asio::detached);
    impl_->thread = std::thread([this] { impl_->ioc.run(); });
}

test_origin::~test_origin() {
    stop();
}

void test_origin::stop() {
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    std::promise<void> closed;
    asio::post(impl_->ioc, [this, &closed] {
        beast::error_code ignored;
        impl_->acceptor.close(ignored);
        for (const auto& c : impl_->open) {
            c->stream.socket().close(ignored);
        }
        impl_->open.clear();
        closed.set_value();
    });
    closed.get_future().wait();
    // Coroutines still parked (on a timer, a WebSocket) are destroyed with the io_context.
    impl_->ioc.stop();
    if (impl_->thread.joinable()) {
        impl_->thread.join();
    }
}

std::uint16_t test_origin::port() const {
    return impl_->port;
}

std::string test_origin::url() const {
    return "http://127.0.0.1:" + std::to_string(impl_->port);
}

std::size_t test_origin::connections() const {
    return impl_->connections.load();
}

std::size_t test_origin::open_connections() const {
    if (impl_->stopped) {
        return 0;  // stop() closed them all, and no thread is left to ask
    }
    // The set belongs to the io thread: count it there.
    std::promise<std::size_t> count;
    asio::post(impl_->ioc, [this, &count] { count.set_value(impl_->open.size()); });
    return count.get_future().get();
}

std::size_t test_origin::requests() const {
    return impl_->requests.load();
}

std::size_t test_origin::requests_for(std::string_view path) const {
    std::lock_guard lock(impl_->mu);
    auto it = impl_->by_path.find(path);
    return it == impl_->by_path.end() ? 0 : it->second;
}

recorded_request test_origin::last_request() const {
    std::lock_guard lock(impl_->mu);
    return impl_->last;
}

void test_origin::set_health(unsigned status) {
    impl_->health.store(status);
}

void test_origin::set_hello_delay(std::chrono::milliseconds delay) {
    impl_->hello_delay_ms.store(delay.count());
}

void test_origin::close_idle_connections() {
    std::promise<void> done;
    asio::post(impl_->ioc, [this, &done] {
        for (auto it = impl_->open.begin(); it != impl_->open.end();) {
            if (!(*it)->idle) {
                // Its response may already be out while the coroutine has not looped yet.
                (*it)->close_when_idle = true;
                ++it;
                continue;
            }
            beast::error_code ignored;
            (*it)->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
            (*it)->stream.socket().close(ignored);
            it = impl_->open.erase(it);
        }
        done.set_value();
    });
    done.get_future().wait();
}

}  // namespace waitroom::test
