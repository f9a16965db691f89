// One task's answer on its way to the client. The pump owns what every
// streamed answer shares — waiting for what the task decides, writing it,
// comment lines that keep an idle stream open, and cancelling the task once
// the client has gone — and asks the route (StreamEvents) only what the
// events are: chat completions' chunks or the Responses API's typed events.
// await_answer() is the same wait for an answer sent in one piece.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "http/http_message.h"

namespace qvl {

// What a route makes of its task's stream; each call returns the SSE text to
// write next ("" for nothing).
class StreamEvents {
 public:
  virtual ~StreamEvents() = default;
  // Before any token: each choice's role chunk, or response.created.
  virtual std::string opening() = 0;
  // What the task decided since the previous call, in order. `last`: the task
  // has succeeded and nothing follows, so what a parser held back goes out too.
  virtual std::string pieces(std::vector<TaskDelta> deltas, bool last) = 0;
  // The task is done (successfully or not): the closing events.
  virtual std::string closing(const Task& task) = 0;
};

struct StreamTiming {
  // How long one wait for the task lasts: how soon a vanished client is seen.
  std::chrono::milliseconds poll{20};
  // SSE comment lines keep idle proxies from closing a stream that waits in
  // the queue or in a long prefill.
  std::chrono::milliseconds heartbeat{10'000};
};

class StreamPump {
 public:
  // `task` must have been made with stream_deltas. `client_gone` is the
  // request's (HttpRequest::client_gone).
  StreamPump(std::shared_ptr<Task> task, std::unique_ptr<StreamEvents> events, std::function<bool()> client_gone,
             StreamTiming timing = {});

  // Makes `res` this stream: its headers and the HTTP layer's provider.
  static void serve(HttpResponse& res, std::shared_ptr<StreamPump> pump);

  // One turn of the provider: writes what is ready, waiting at most one
  // poll period. False once the stream is cut off (the task is cancelled).
  bool pump(ChunkSink& sink);
  // The response ended; unless by the stream's own end, nothing will read
  // the rest, so the task stops computing it.
  void ended(bool completed);

 private:
  bool write(ChunkSink& sink, const std::string& text);
  bool cut();  // cancels the task; false

  std::shared_ptr<Task> task_;
  std::unique_ptr<StreamEvents> events_;
  std::function<bool()> client_gone_;
  StreamTiming timing_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_write_ = std::chrono::steady_clock::now();
};

// Waits for a task whose answer goes out in one piece, cancelling it if the
// client goes away meanwhile.
void await_answer(Task& task, const HttpRequest& req, StreamTiming timing = {});

}  // namespace qvl
