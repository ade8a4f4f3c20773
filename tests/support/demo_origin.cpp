// waitroom-demo-origin: a small demo "shop" to put behind waitroomd (the README's run command).
// Every page shows the time it was served and its path, so it is plain to see when a request
// reached the origin rather than the waiting room. Standalone Beast, one thread.
//
//   waitroom-demo-origin [--listen 127.0.0.1:3000]

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::string_view style_css = R"(body { font-family: system-ui, sans-serif; margin: 0;
  background: #faf7f2; color: #2b2b2b; }
header { background: #2f4858; color: #fff; padding: 1.2rem 2rem; }
header h1 { margin: 0; font-size: 1.6rem; }
main { max-width: 60rem; margin: 2rem auto; padding: 0 1rem; }
.products { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr));
  gap: 1rem; }
.product { background: #fff; border-radius: .6rem; padding: 1rem;
  box-shadow: 0 1px 4px rgba(0,0,0,.1); }
.product .price { font-weight: bold; color: #33658a; }
.product button { background: #f6ae2d; border: 0; border-radius: .3rem; padding: .4rem .8rem;
  cursor: pointer; }
footer { color: #777; font-size: .85rem; text-align: center; margin: 2rem; }
)";

struct product {
    const char* name;
    const char* blurb;
    const char* price;
};

constexpr product products[] = {
    {"Launch-day sneakers", "Limited run. Everyone wants a pair.", "&euro;129.00"},
    {"Concert ticket", "Front standing area, one night only.", "&euro;79.50"},
    {"Console bundle", "The console, two controllers and a game.", "&euro;499.00"},
    {"Coffee beans", "Single origin, roasted this week.", "&euro;14.90"},
};

std::string html_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::string now_utc() {
    std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

std::string shop_page(std::string_view target) {
    std::string page =
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>Demo Shop</title>\n<link rel=\"stylesheet\" href=\"/static/style.css\">\n"
        "</head>\n<body>\n<header><h1>Demo Shop</h1>"
        "<p>You are through the waiting room. Happy shopping!</p></header>\n<main>\n"
        "<section class=\"products\">\n";
    for (const auto& p : products) {
        page += "<article class=\"product\"><h2>" + std::string(p.name) + "</h2><p>" + p.blurb +
                "</p><p class=\"price\">" + p.price +
                "</p><form method=\"post\" action=\"/checkout\"><button>Add to cart</button>"
                "</form></article>\n";
    }
    page += "</section>\n</main>\n<footer>Served by the demo origin at " + now_utc() +
            " for <code>" + html_escape(target) + "</code></footer>\n</body>\n</html>\n";
    return page;
}

http::response<http::string_body> handle(const http::request<http::string_body>& req) {
    http::response<http::string_body> res{http::status::ok, req.version()};
    res.set(http::field::server, "waitroom-demo-origin");
    res.keep_alive(req.keep_alive());
    std::string_view target = req.target();
    std::string_view path = target.substr(0, target.find('?'));
    if (path == "/static/style.css") {
        res.set(http::field::content_type, "text/css; charset=utf-8");
        res.set(http::field::cache_control, "max-age=3600");
        res.body() = std::string(style_css);
    } else if (path == "/healthz") {
        res.set(http::field::content_type, "text/plain");
        res.body() = "ok\n";
    } else if (path.starts_with("/static/")) {
        res.result(http::status::not_found);
        res.set(http::field::content_type, "text/plain");
        res.body() = "not found\n";
    } else {
        res.set(http::field::content_type, "text/html; charset=utf-8");
        res.set(http::field::cache_control, "no-store");
        res.body() = shop_page(target);
    }
    if (req.method() == http::verb::head) {
        res.content_length(res.body().size());
        res.body().clear();
        return res;
    }
    res.prepare_payload();
    return res;
}

class session : public std::enable_shared_from_this<session> {
  public:
    explicit session(tcp::socket socket) : stream_(std::move(socket)) {}

    void start() { do_read(); }

  private:
    void do_read() {
        req_ = {};
        stream_.expires_after(std::chrono::seconds{60});
        http::async_read(stream_, buffer_, req_,
                         beast::bind_front_handler(&session::on_read, shared_from_this()));
    }

    void on_read(beast::error_code ec, std::size_t) {
        if (ec) {
            return;  // closed, timed out or malformed: nothing to answer in a demo
        }
        res_ = handle(req_);
        http::async_write(stream_, res_,
                          beast::bind_front_handler(&session::on_write, shared_from_this()));
    }

    void on_write(beast::error_code ec, std::size_t) {
        if (ec || !res_.keep_alive()) {
            beast::error_code ignored;
            stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
            return;
        }
        do_read();
    }

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    http::request<http::string_body> req_;
    http::response<http::string_body> res_;
};

void do_accept(tcp::acceptor& acceptor) {
    acceptor.async_accept([&acceptor](beast::error_code ec, tcp::socket socket) {
        if (!ec) {
            std::make_shared<session>(std::move(socket))->start();
        }
        do_accept(acceptor);
    });
}

int usage(std::ostream& out, int code) {
    out << "Usage: waitroom-demo-origin [--listen HOST:PORT]   (default 127.0.0.1:3000)\n";
    return code;
}

}  // namespace

int main(int argc, char** argv) {
    std::string listen = "127.0.0.1:3000";
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            return usage(std::cout, 0);
        }
        if (a == "--listen" && i + 1 < argc) {
            listen = argv[++i];
        } else {
            std::cerr << "waitroom-demo-origin: unexpected argument '" << a << "'\n";
            return usage(std::cerr, 2);
        }
    }
    auto colon = listen.rfind(':');
    if (colon == std::string::npos) {
        std::cerr << "waitroom-demo-origin: --listen wants HOST:PORT\n";
        return 2;
    }
    std::string host = listen.substr(0, colon);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    try {
        asio::io_context ioc{1};
        tcp::endpoint ep(asio::ip::make_address(host),
                         static_cast<unsigned short>(std::stoi(listen.substr(colon + 1))));
        tcp::acceptor acceptor(ioc, ep);
        std::cout << "demo origin listening on http://" << listen << std::endl;
        asio::signal_set signals(ioc, SIGINT, SIGTERM);
        signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
        do_accept(acceptor);
        ioc.run();
    } catch (const std::exception& e) {
        std::cerr << "waitroom-demo-origin: " << e.what() << '\n';
        return 1;
    }
    return 0;
}
