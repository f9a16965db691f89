// StreamPump over real tasks on the tiny model's scheduler: the route's
// events in order (opening, every piece, the final pieces once, closing),
// keep-alive comments while a task waits in the queue, and a client that
// goes away (or a write that fails) cancelling its task.
#include "server/routes/stream_pump.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "engine/engine.h"
#include "engine/scheduler.h"

namespace qvl {
namespace {

using namespace std::chrono_literals;

// A ChunkSink that keeps what it is given, or refuses it once told to.
class RecordingSink : public ChunkSink {
 public:
  bool write(std::string_view data) override {
    if (refuse) return false;
    out.append(data);
    return true;
  }
  std::string out;
  bool refuse = false;
};

// Events that name themselves, and what the pump asked in which order.
class TracingEvents : public StreamEvents {
 public:
  explicit TracingEvents(std::vector<std::string>& calls) : calls_(calls) {}
  std::string opening() override {
    calls_.push_back("opening");
    return "[open]";
  }
  std::string pieces(std::vector<TaskDelta> deltas, bool last) override {
    std::string text;
    for (const TaskDelta& d : deltas) text += d.text;
    if (last) calls_.push_back("last pieces");
    else if (!text.empty()) calls_.push_back("pieces");
    return text;
  }
  std::string closing(const Task& t) override {
    calls_.push_back("closing");
    return std::string("[close ") + outcome_name(t.outcome()) + "]";
  }

 private:
  std::vector<std::string>& calls_;
};

class StreamPumpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    EngineParams p;
    p.model_dir = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";
    p.threads = 1;
    p.ctx_size = 4096;
    engine_ = Engine::create(p).release();
  }
  static void TearDownTestSuite() { delete engine_; }

  // A greedy text-only task of `tokens` tokens, EOS ignored.
  static std::shared_ptr<Task> task(int64_t tokens) {
    GenerateRequest r = greedy_request({Message{"user", {{"Describe a sunset.", nullptr}}}}, tokens);
    return std::make_shared<Task>(std::move(r), /*stream_deltas=*/true);
  }

  static Engine* engine_;
  Scheduler scheduler_{*engine_, SchedulerOptions{1, 4, 0}};
  std::vector<std::string> calls_;
};

Engine* StreamPumpTest::engine_ = nullptr;

TEST_F(StreamPumpTest, WritesTheOpeningEveryPieceAndTheClosingInOrder) {
  auto t = task(24);
  StreamPump pump(t, std::make_unique<TracingEvents>(calls_), [] { return false; });
  ASSERT_EQ(scheduler_.submit(t), Scheduler::Refusal::None);
  RecordingSink sink;
  for (int turns = 0; !sink.is_done() && turns < 5000; ++turns) ASSERT_TRUE(pump.pump(sink));
  ASSERT_TRUE(sink.is_done());
  ASSERT_EQ(t->outcome(), TaskOutcome::Succeeded);
  EXPECT_EQ(t->result().token_ids.size(), 24u);
  EXPECT_EQ(sink.out, "[open]" + t->result().text + "[close succeeded]");
  ASSERT_GE(calls_.size(), 3u);
  EXPECT_EQ(calls_.front(), "opening");
  EXPECT_EQ(calls_[calls_.size() - 2], "last pieces");
  EXPECT_EQ(calls_.back(), "closing");
  EXPECT_EQ(std::count(calls_.begin(), calls_.end(), "last pieces"), 1);
}

TEST_F(StreamPumpTest, KeepsAQueuedStreamAliveAndCancelsItWhenTheClientGoes) {
  auto running = task(100000);  // holds the only slot
  ASSERT_EQ(scheduler_.submit(running), Scheduler::Refusal::None);
  auto queued = task(8);
  std::atomic<bool> gone = false;
  StreamPump pump(queued, std::make_unique<TracingEvents>(calls_), [&] { return gone.load(); },
                  StreamTiming{10ms, 50ms});
  ASSERT_EQ(scheduler_.submit(queued), Scheduler::Refusal::None);
  RecordingSink sink;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < 400ms) ASSERT_TRUE(pump.pump(sink));
  // One comment per idle 50 ms after the opening: not one per 10 ms poll.
  const std::string beat = ": keep-alive\n\n";
  size_t beats = 0;
  for (size_t at = sink.out.find(beat); at != std::string::npos; at = sink.out.find(beat, at + 1)) ++beats;
  EXPECT_EQ(sink.out.rfind("[open]", 0), 0u) << sink.out;
  EXPECT_GE(beats, 3u) << sink.out;
  EXPECT_LE(beats, 8u) << sink.out;
  EXPECT_EQ(sink.out.size(), 6 + beats * beat.size()) << "nothing but keep-alives while queued: " << sink.out;

  gone = true;
  EXPECT_FALSE(pump.pump(sink));
  ASSERT_TRUE(queued->wait_done(5000ms));
  EXPECT_EQ(queued->outcome(), TaskOutcome::Cancelled);
  EXPECT_FALSE(sink.is_done());
  running->cancel();
}

TEST_F(StreamPumpTest, AWriteTheClientNeverTakesCancelsTheTask) {
  auto t = task(100000);
  StreamPump pump(t, std::make_unique<TracingEvents>(calls_), [] { return false; });
  ASSERT_EQ(scheduler_.submit(t), Scheduler::Refusal::None);
  RecordingSink sink;
  ASSERT_TRUE(pump.pump(sink));
  sink.refuse = true;
  bool cut = false;
  for (int turns = 0; !cut && turns < 5000; ++turns) cut = !pump.pump(sink);
  ASSERT_TRUE(cut);
  ASSERT_TRUE(t->wait_done(5000ms));
  EXPECT_EQ(t->outcome(), TaskOutcome::Cancelled);
}

TEST_F(StreamPumpTest, AResponseEndedEarlyCancelsTheTask) {
  auto t = task(100000);
  StreamPump pump(t, std::make_unique<TracingEvents>(calls_), [] { return false; });
  ASSERT_EQ(scheduler_.submit(t), Scheduler::Refusal::None);
  pump.ended(/*completed=*/true);  // a stream that ended by its own end leaves the task alone
  EXPECT_FALSE(t->wait_done(50ms));
  pump.ended(/*completed=*/false);
  ASSERT_TRUE(t->wait_done(5000ms));
  EXPECT_EQ(t->outcome(), TaskOutcome::Cancelled);
}

}  // namespace
}  // namespace qvl
