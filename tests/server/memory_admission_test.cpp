// MemoryAdmission on its own: reservations add up to the budget and come back
// when dropped (with the pixels they travel with), a request that cannot fit
// is refused at once (413) and one that must wait too long gets 429.
#include "server/memory_admission.h"

#include <gtest/gtest.h>

#include <thread>

#include "server/api_error.h"

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

}  // namespace
}  // namespace qvl
