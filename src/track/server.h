// `shoal server`: MLflow's REST API 2.0 over a tracking Store, in one process (cpp-httplib's
// thread pool; the store serialises writes). Request and response shapes, error bodies
// ({"error_code", "message"}) and limits follow MLflow's documentation.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "track/store.h"

namespace httplib {
class Server;
}

namespace shoal::track {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 5000;                       ///< 0: any free port (see Server::port())
  std::string auth_token;                ///< non-empty: every request needs "Authorization: Bearer <token>"
  size_t max_json_bytes = 1 << 20;       ///< a larger JSON request body is INVALID_PARAMETER_VALUE (400)
};

class Server {
 public:
  Server(std::shared_ptr<Store> store, ServerOptions options);
  ~Server();
  /// Binds, then serves until Stop(). Throws IOError when the address cannot be bound.
  void Run();
  /// Binds and returns the port (for port 0), so that Run() can follow on another thread.
  int Bind();
  void Stop();
  int port() const { return port_; }

 private:
  void Routes();
  std::shared_ptr<Store> store_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  bool bound_ = false;
  std::atomic<bool> stop_requested_{false}, entered_{false}, returned_{false};
};

}  // namespace shoal::track
