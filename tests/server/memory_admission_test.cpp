// MemoryAdmission on its own: reservations add up to the budget and come back
// when dropped (with the pixels they travel with), a request that cannot fit
// is refused at once (413) and one that must wait too long gets 429; the
// engine's KV caches (standing reservations) come out of a set budget, and
// an automatic budget grows by them.
#include "server/media/memory_admission.h"

#include <gtest/gtest.h>

#include <thread>

#include "server/requests/api_error.h"

namespace qvl {
namespace {

using Clock = MemoryAdmission::Clock;
using std::chrono::milliseconds;

int status_of(const std::function<void()>& f, std::string* code = nullptr) {
  try {
    f();
  } catch (const ApiError& e) {
    if (code) *code = e.code();
    return e.status();
  }
  return 0;
}

MemoryAdmissionOptions options(uint64_t budget, int decodes = 2) {
  MemoryAdmissionOptions o;
  o.memory_budget_bytes = budget;
  o.max_decodes = decodes;
  return o;
}

TEST(MemoryAdmission, ReservationsAddUpAndComeBack) {
  ServerMemoryAdmission a(options(1000));
  {
    auto r1 = a.reserve(600, 0, Clock::now(), "p");
    auto r2 = a.reserve(400, 0, Clock::now(), "p");
    EXPECT_EQ(a.reserved_bytes(), 1000u);
    std::string code;
    EXPECT_EQ(status_of([&] { a.reserve(1, 0, Clock::now() + milliseconds(20), "p"); }, &code), 429);
    EXPECT_EQ(code, "images_busy");
    r1.shrink_to(100);
    EXPECT_EQ(a.reserved_bytes(), 500u);
  }
  EXPECT_EQ(a.reserved_bytes(), 0u);
}

TEST(MemoryAdmission, WhatCanNeverFitIsRefusedAtOnce) {
  ServerMemoryAdmission a(options(1000));
  const auto t = Clock::now();
  EXPECT_EQ(status_of([&] { a.reserve(1001, 0, Clock::now() + std::chrono::seconds(10), "p"); }), 413);
  EXPECT_EQ(status_of([&] { a.reserve(600, 500, Clock::now() + std::chrono::seconds(10), "p"); }), 413);
  EXPECT_LT(Clock::now() - t, milliseconds(500));  // no waiting for what cannot come
}

TEST(MemoryAdmission, AWaiterGetsTheBudgetWhenItIsReturned) {
  ServerMemoryAdmission a(options(1000));
  auto held = std::make_unique<MemoryAdmission::Reservation>(a.reserve(900, 0, Clock::now(), "p"));
  std::thread giver([&] {
    std::this_thread::sleep_for(milliseconds(50));
    held.reset();
  });
  auto r = a.reserve(500, 0, Clock::now() + std::chrono::seconds(5), "p");
  EXPECT_EQ(r.bytes(), 500u);
  giver.join();
}

TEST(MemoryAdmission, DecodePlacesAreBounded) {
  ServerMemoryAdmission a(options(1000, 1));
  {
    auto turn = a.decode_turn(Clock::now(), "p");
    EXPECT_EQ(a.decoding(), 1);
    EXPECT_EQ(status_of([&] { a.decode_turn(Clock::now() + milliseconds(20), "p"); }), 429);
  }
  EXPECT_EQ(a.decoding(), 0);
  EXPECT_NO_THROW(a.decode_turn(Clock::now(), "p"));
}

// The decoder's reserve() takes the reservation; hold() hands it over with
// the pixels, shrunk to them, and the budget returns with the last reference.
TEST(MemoryAdmission, TheReservationLivesAsLongAsThePixels) {
  ServerMemoryAdmission a(options(1 << 20));
  MediaReserver reserver(a, 0, Clock::now(), "p");
  reserver.reserve(5000);  // the decoder's peak, from the header
  EXPECT_EQ(a.reserved_bytes(), 5000u);
  Image img;
  img.width = 10, img.height = 10;
  img.rgb.assign(300, 1);
  std::shared_ptr<const Image> held = reserver.hold(std::move(img));
  EXPECT_EQ(a.reserved_bytes(), held_bytes(*held));
  std::shared_ptr<const Image> copy = held;
  held.reset();
  EXPECT_GT(a.reserved_bytes(), 0u);
  copy.reset();
  EXPECT_EQ(a.reserved_bytes(), 0u);
}

TEST(MemoryAdmission, KvCachesComeOutOfASetBudget) {
  ServerMemoryAdmission a(options(1000));
  EXPECT_FALSE(a.automatic());
  std::optional<MemoryAdmission::Reservation> kv = a.reserve_standing(700);
  ASSERT_TRUE(kv);
  EXPECT_EQ(a.budget(), 1000u);
  EXPECT_EQ(a.media_budget(), 300u);
  // Media that fitted the whole budget no longer fits beside the KV caches: 413 at once, naming both.
  try {
    a.reserve(400, 0, Clock::now() + std::chrono::seconds(10), "messages[0].content[1]");
    ADD_FAILURE() << "not refused";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 413);
    EXPECT_EQ(e.param(), "messages[0].content[1]");
    EXPECT_NE(std::string(e.what()).find("needs 400 bytes, over the server's image memory budget of 300 bytes"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--memory-budget leaves beside the KV caches"), std::string::npos) << e.what();
  }
  auto media = a.reserve(300, 0, Clock::now(), "p");
  EXPECT_EQ(a.reserved_bytes(), 1000u);
  // A second engine's caches do not fit what is left.
  EXPECT_FALSE(a.reserve_standing(1));
  kv.reset();
  EXPECT_EQ(a.media_budget(), 1000u);
  EXPECT_EQ(a.reserved_bytes(), 300u);
}

TEST(MemoryAdmission, AnAutomaticBudgetGrowsByTheKvCaches) {
  ServerMemoryAdmission a(MemoryAdmissionOptions{});
  EXPECT_TRUE(a.automatic());
  EXPECT_EQ(a.budget(), kAutoMediaBudget);
  {
    std::optional<MemoryAdmission::Reservation> kv = a.reserve_standing(uint64_t{5} << 30);
    ASSERT_TRUE(kv);
    EXPECT_EQ(a.budget(), kAutoMediaBudget + (uint64_t{5} << 30));
    EXPECT_EQ(a.media_budget(), kAutoMediaBudget);
    EXPECT_EQ(status_of([&] { a.reserve(kAutoMediaBudget + 1, 0, Clock::now(), "p"); }), 413);
    EXPECT_EQ(a.reserve(kAutoMediaBudget, 0, Clock::now(), "p").bytes(), kAutoMediaBudget);
  }
  EXPECT_EQ(a.budget(), kAutoMediaBudget);
  EXPECT_EQ(a.reserved_bytes(), 0u);
}

}  // namespace
}  // namespace qvl
