// The event-loop HTTP server of http_server.hpp: one connection object per socket, all of
// them driven by asio on the thread that calls run().

#include "http_server.hpp"

#include <array>
#include <cctype>
#include <unordered_set>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace inferopt::cli::http {
namespace {

namespace beast = boost::beast;
namespace wire = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view view(beast::string_view text) { return {text.data(), text.size()}; }

request to_request(wire::request<wire::string_body>&& message) {
  request r;
  r.method = std::string(view(message.method_string()));
  const std::string_view target = view(message.target());
  r.path = std::string(target.substr(0, target.find('?')));
  for (const auto& field : message) r.headers.emplace_back(view(field.name_string()), view(field.value()));
  r.body = std::move(message.body());
  r.received = std::chrono::steady_clock::now();
  return r;
}

}  // namespace

std::optional<std::string_view> request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equal_ignoring_case(key, name)) return value;
  }
  return std::nullopt;
}

struct server::state {
  class connection;

  server_options options;
  handler on_request;
  net::io_context io{1};
  tcp::acceptor acceptor{io};
  net::steady_timer accept_retry{io};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> keep_running;
  // Touched on the event-loop thread only.
  std::unordered_set<connection*> connections;
  bool stopping = false, accept_paused = false;

  void accept();
  void closed(connection* c);
  void begin_stop();
};

/// One socket: read a request, hand it to the handler, write its answer, and again while
/// the connection is kept alive. `busy_` spans the handler and the write: stop() closes the
/// connections that are not busy and lets the others answer first.
class server::state::connection : public std::enable_shared_from_this<connection> {
 public:
  connection(tcp::socket socket, state& owner) : stream_(std::move(socket)), owner_(owner) {}

  void start() {
    owner_.connections.insert(this);
    // Beast reads at most the buffer's free space (512 bytes when it is empty): a 50 KB body
    // took about 100 reads.
    buffer_.reserve(64 * 1024);
    read_request();
  }
  void close_if_idle() {
    if (!busy_) close();
  }

 private:
  void read_request() {
    parser_.emplace();
    parser_->body_limit(owner_.options.max_body_bytes);
    stream_.expires_after(owner_.options.idle_timeout);
    wire::async_read_header(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return failed(ec);
    if (!equal_ignoring_case(view(parser_->get()[wire::field::expect]), "100-continue")) return read_body();
    auto go_on = std::make_shared<wire::response<wire::empty_body>>(wire::status::continue_, 11);
    wire::async_write(stream_, *go_on, [self = shared_from_this(), go_on](beast::error_code e, std::size_t) {
      if (e) return self->close();
      self->read_body();
    });
  }

  void read_body() {
    wire::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
  }

  void on_request(beast::error_code ec) {
    if (ec) return failed(ec);
    stream_.expires_never();  // the handler may wait for a batch
    wire::request<wire::string_body> message = parser_->release();
    keep_alive_ = message.keep_alive() && ++served_ < owner_.options.keep_alive_requests;
    busy_ = true;
    auto self = shared_from_this();
    responder answer = [self](response out) {
      net::post(self->stream_.get_executor(), [self, out = std::move(out)]() mutable { self->write(std::move(out), self->keep_alive_); });
    };
    try {
      owner_.on_request(to_request(std::move(message)), std::move(answer));
    } catch (const std::exception&) {
      write(response{.status = 500, .body = owner_.options.error_body("internal error")}, false);
    }
  }

  void write(response out, bool keep_alive) {
    busy_ = true;
    keep_alive = keep_alive && !owner_.stopping;
    auto message = std::make_shared<wire::response<wire::string_body>>();
    message->version(11);
    message->result(static_cast<unsigned>(out.status));
    message->set(wire::field::content_type, out.content_type);
    for (const auto& [name, value] : out.headers) message->set(name, value);
    message->body() = std::move(out.body);
    message->keep_alive(keep_alive);
    message->prepare_payload();
    stream_.expires_after(owner_.options.idle_timeout);
    wire::async_write(stream_, *message, [self = shared_from_this(), message, keep_alive](beast::error_code ec, std::size_t) {
      self->busy_ = false;
      if (ec) return self->close();
      if (keep_alive) return self->read_request();
      self->close_after_reading_what_is_left();
    });
  }

  /// A request the server could not read: 413 for a body over the limit, 400 for malformed
  /// HTTP, nothing for a client that went away or a timeout.
  void failed(beast::error_code ec) {
    if (ec == wire::error::body_limit) {
      return write(response{.status = 413, .body = owner_.options.error_body(owner_.options.body_too_large_message)}, false);
    }
    const bool malformed = &ec.category() == &wire::make_error_code(wire::error::bad_method).category();
    if (malformed && ec != wire::error::end_of_stream && ec != wire::error::partial_message) {
      return write(response{.status = 400, .body = owner_.options.error_body("malformed HTTP request")}, false);
    }
    close();
  }

  /// Closing with unread bytes would reset the connection and could discard the answer
  /// before the client reads it: stop sending, read what is left for up to a second, close.
  void close_after_reading_what_is_left() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(1));
    discard_until_end(std::make_shared<std::array<char, 4096>>());
  }
  void discard_until_end(std::shared_ptr<std::array<char, 4096>> sink) {
    stream_.async_read_some(net::buffer(*sink), [self = shared_from_this(), sink](beast::error_code ec, std::size_t) {
      if (ec) return self->close();
      self->discard_until_end(sink);
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    busy_ = false;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    owner_.closed(this);
  }

  beast::tcp_stream stream_;
  state& owner_;
  beast::flat_buffer buffer_;
  std::optional<wire::request_parser<wire::string_body>> parser_;
  std::size_t served_ = 0;
  bool busy_ = false, closed_ = false, keep_alive_ = false;
};

void server::state::accept() {
  if (stopping) return;
  if (connections.size() >= options.max_connections) {
    accept_paused = true;  // resumed when a connection closes; new ones wait in the backlog
    return;
  }
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopping) return;
    if (ec) {  // out of file descriptors, say: try again shortly rather than spin
      accept_retry.expires_after(std::chrono::milliseconds(10));
      accept_retry.async_wait([this](beast::error_code) { accept(); });
      return;
    }
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    std::make_shared<connection>(std::move(socket), *this)->start();
    accept();
  });
}

void server::state::closed(connection* c) {
  connections.erase(c);
  if (accept_paused && !stopping) {
    accept_paused = false;
    accept();
  }
  if (stopping && connections.empty()) keep_running.reset();
}

void server::state::begin_stop() {
  if (stopping) return;
  stopping = true;
  beast::error_code ignored;
  acceptor.close(ignored);
  accept_retry.cancel();
  const std::vector<connection*> open(connections.begin(), connections.end());  // close() edits the set
  for (connection* c : open) c->close_if_idle();
  if (connections.empty()) keep_running.reset();
}

server::server(server_options options, handler on_request) : state_(std::make_shared<state>()) {
  state_->options = std::move(options);
  state_->on_request = std::move(on_request);
}

server::~server() = default;

int server::listen(const std::string& host, int port) {
  tcp::resolver resolver(state_->io);
  const tcp::endpoint endpoint = *resolver.resolve(host, std::to_string(port), tcp::resolver::passive).begin();
  state_->acceptor.open(endpoint.protocol());
  state_->acceptor.set_option(net::socket_base::reuse_address(true));
  state_->acceptor.bind(endpoint);
  state_->acceptor.listen(1024);  // a burst of clients connecting at once is not made to retry
  return state_->acceptor.local_endpoint().port();
}

void server::run() {
  state_->keep_running.emplace(state_->io.get_executor());
  state_->accept();
  state_->io.run();
}

void server::stop() {
  net::post(state_->io, [s = state_] { s->begin_stop(); });
}

}  // namespace inferopt::cli::http
