#include "server/routes/stream_pump.h"

#include <utility>

namespace qvl {

StreamPump::StreamPump(std::shared_ptr<Task> task, std::unique_ptr<StreamEvents> events,
                       std::function<bool()> client_gone, StreamTiming timing)
    : task_(std::move(task)), events_(std::move(events)), client_gone_(std::move(client_gone)), timing_(timing) {}

void StreamPump::serve(HttpResponse& res, std::shared_ptr<StreamPump> pump) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_provider(
      "text/event-stream; charset=utf-8",  // SSE is UTF-8 by definition; some clients need telling
      [pump](ChunkSink& sink) { return pump->pump(sink); }, [pump](bool completed) { pump->ended(completed); });
}

bool StreamPump::pump(ChunkSink& sink) {
  if (!started_) {
    started_ = true;
    if (!write(sink, events_->opening())) return cut();
  }
  Task& t = *task_;
  std::vector<TaskDelta> deltas = t.wait_deltas(timing_.poll);
  const bool done = t.done();
  if (done)  // what arrived between the two calls
    for (TaskDelta& d : t.wait_deltas(std::chrono::milliseconds(0))) deltas.push_back(std::move(d));
  const bool succeeded = done && t.outcome() == TaskOutcome::Succeeded;
  if (!write(sink, events_->pieces(std::move(deltas), succeeded))) return cut();
  if (!done) {
    if (client_gone_ && client_gone_()) return cut();
    if (std::chrono::steady_clock::now() - last_write_ > timing_.heartbeat && !write(sink, ": keep-alive\n\n"))
      return cut();
    return true;
  }
  write(sink, events_->closing(t));
  sink.done();
  return true;
}

void StreamPump::ended(bool completed) {
  if (!completed) task_->cancel(TaskOutcome::Cancelled);
}

bool StreamPump::write(ChunkSink& sink, const std::string& text) {
  if (text.empty()) return true;
  last_write_ = std::chrono::steady_clock::now();
  return sink.write(text);
}

bool StreamPump::cut() {
  task_->cancel(TaskOutcome::Cancelled);
  return false;
}

void await_answer(Task& task, const HttpRequest& req, StreamTiming timing) {
  while (!task.wait_done(timing.poll))
    if (req.gone()) task.cancel(TaskOutcome::Cancelled);
}

}  // namespace qvl
