// An HTTP/1.1 server on one event-loop thread (Boost.Beast on asio) for `inferopt serve`.
//
// Why not a thread per connection (cpp-httplib): httplib 0.11 waits for a connection's next
// request by polling it every 11 ms on that connection's thread, so 256 clients that each
// send now and then woke the server tens of thousands of times a second, and under overload
// the refused requests' HTTP work took the CPU the batches needed (docs/BENCHMARKS.md,
// "Serving"). Here an idle connection costs nothing until bytes arrive, and a handler that
// has to wait (a batch) answers later, from any thread, through its responder.

#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferopt::cli::http {

struct request {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< the target without its query
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::steady_clock::time_point received;  ///< when its last byte was read

  /// The value of a header, its name compared without case.
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
};

struct response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Sends the answer to one request; callable once, from any thread.
using responder = std::function<void(response)>;
/// Called on the event-loop thread for every complete request: it must not block, so work
/// that waits goes elsewhere and answers through the responder.
using handler = std::function<void(request&&, responder)>;

struct server_options {
  std::size_t max_body_bytes = std::size_t{64} << 20;    ///< larger bodies get 413
  std::size_t keep_alive_requests = 100000;              ///< answers per connection before it closes
  std::size_t max_connections = 1024;                    ///< beyond it new connections wait in the backlog
  std::chrono::milliseconds idle_timeout{5000};          ///< to receive a whole request (slow clients)
  std::function<std::string(const std::string&)> error_body;  ///< body of the server's own 4xx answers
  std::string body_too_large_message = "the request body is too large";
};

class server {
 public:
  server(server_options options, handler on_request);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Listens on host:port (port 0: a free one); returns the port. Throws on failure.
  int listen(const std::string& host, int port);
  /// Runs the event loop on the calling thread until stop() has drained every connection.
  void run();
  /// From any thread: stops accepting, closes idle connections, lets each connection with a
  /// request in flight answer it and then close.
  void stop();

 private:
  struct state;
  std::shared_ptr<state> state_;
};

}  // namespace inferopt::cli::http
