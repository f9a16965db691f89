#include "media/admission.h"

#include <algorithm>

#include "util/error.h"

namespace qvl {

std::string mebibytes(uint64_t bytes) { return cat(bytes / (1024 * 1024), " MiB"); }

void MemoryAdmission::refuse_too_large(uint64_t bytes, uint64_t request_holds, uint64_t room,
                                       const std::string& param) const {
  throw MediaRefusal(MediaRefusal::Kind::TooLarge,
                     cat("decoding needs ", bytes, " bytes",
                         request_holds > 0 ? cat(" beside the ", request_holds, " bytes of the request's earlier media")
                                           : std::string(),
                         ", over the image memory budget of ", room, " bytes (", mebibytes(room),
                         ": what the memory budget leaves beside the KV caches)"),
                     param);
}

void MemoryAdmission::refuse_busy(const std::string& what, const std::string& param) const {
  throw MediaRefusal(MediaRefusal::Kind::Busy, cat("busy decoding other media (", what, ")"), param);
}

MemoryAdmission::Reservation::Reservation(Reservation&& o) noexcept
    : owner_(o.owner_), bytes_(o.bytes_), standing_(o.standing_) {
  o.owner_ = nullptr;
  o.bytes_ = 0;
}

MemoryAdmission::Reservation& MemoryAdmission::Reservation::operator=(Reservation&& o) noexcept {
  std::swap(owner_, o.owner_);
  std::swap(bytes_, o.bytes_);
  std::swap(standing_, o.standing_);
  return *this;
}

MemoryAdmission::Reservation::~Reservation() {
  if (owner_ && bytes_ > 0) owner_->release(bytes_, standing_);
}

void MemoryAdmission::Reservation::shrink_to(uint64_t bytes) {
  if (!owner_ || bytes >= bytes_) return;
  owner_->release(bytes_ - bytes, standing_);
  bytes_ = bytes;
}

MemoryAdmission::DecodeTurn::~DecodeTurn() {
  if (owner_) owner_->end_decode();
}

MemoryAdmission::Reservation MemoryAdmission::reserve(uint64_t bytes, uint64_t request_holds, Clock::time_point deadline,
                                                    const std::string& param) {
  std::unique_lock lock(mutex_);
  const uint64_t room = budget_ - standing_;
  if (bytes > room || request_holds > room - bytes) {
    lock.unlock();
    refuse_too_large(bytes, request_holds, room, param);
  }
  // Standing reservations change only while no request runs (the engine's
  // creation), so `room` holds while this waits.
  if (!changed_.wait_until(lock, deadline, [&] { return reserved_ <= budget_ - bytes; })) {
    const std::string what = cat(mebibytes(reserved_ - standing_), " of the ", mebibytes(room), " image memory budget are taken");
    lock.unlock();
    refuse_busy(what, param);
  }
  reserved_ += bytes;
  return Reservation(this, bytes);
}

std::optional<MemoryAdmission::Reservation> MemoryAdmission::reserve_standing(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (automatic()) {
    budget_ += bytes;
  } else if (bytes > budget_ - reserved_) {
    return std::nullopt;
  }
  reserved_ += bytes;
  standing_ += bytes;
  return Reservation(this, bytes, true);
}

MemoryAdmission::Reservation MemoryAdmission::reserve_now(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  reserved_ += bytes;
  return Reservation(this, bytes);
}

uint64_t MemoryAdmission::budget() const {
  std::lock_guard lock(mutex_);
  return budget_;
}

uint64_t MemoryAdmission::media_budget() const {
  std::lock_guard lock(mutex_);
  return budget_ - standing_;
}

uint64_t MemoryAdmission::standing_bytes() const {
  std::lock_guard lock(mutex_);
  return standing_;
}

MemoryAdmission::DecodeTurn MemoryAdmission::decode_turn(Clock::time_point deadline, const std::string& param) {
  std::unique_lock lock(mutex_);
  if (!changed_.wait_until(lock, deadline, [&] { return decoding_ < options_.max_decodes; }))
    refuse_busy(cat("all ", options_.max_decodes, " decode places are taken"), param);
  ++decoding_;
  return DecodeTurn(this);
}

uint64_t MemoryAdmission::reserved_bytes() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

int MemoryAdmission::decoding() const {
  std::lock_guard lock(mutex_);
  return decoding_;
}

void MemoryAdmission::release(uint64_t bytes, bool standing) {
  {
    std::lock_guard lock(mutex_);
    reserved_ -= bytes;
    if (standing) {
      standing_ -= bytes;
      if (automatic()) budget_ -= bytes;
    }
  }
  changed_.notify_all();
}

void MemoryAdmission::end_decode() {
  {
    std::lock_guard lock(mutex_);
    --decoding_;
  }
  changed_.notify_all();
}

void MediaReserver::reserve(uint64_t peak_bytes) {
  reservations_.push_back(admission_.reserve(peak_bytes, request_holds_ + reserved_, deadline_, param_));
  reserved_ += peak_bytes;
}

void MediaReserver::shrink_to(uint64_t bytes) {
  for (MemoryAdmission::Reservation& r : reservations_) {
    const uint64_t keep = std::min(r.bytes(), bytes);
    r.shrink_to(keep);
    bytes -= keep;
  }
}

std::shared_ptr<const Image> MediaReserver::hold(Image image) {
  struct Held {
    Image image;
    std::vector<MemoryAdmission::Reservation> reservations;
  };
  image.rgb.shrink_to_fit();
  shrink_to(held_bytes(image));
  auto held = std::make_shared<Held>(Held{std::move(image), std::move(reservations_)});
  return std::shared_ptr<const Image>(held, &held->image);
}

std::shared_ptr<const Video> MediaReserver::hold(Video video) {
  struct Held {
    Video video;
    std::vector<MemoryAdmission::Reservation> reservations;
  };
  for (Image& f : video.frames) f.rgb.shrink_to_fit();
  shrink_to(held_bytes(video));
  auto held = std::make_shared<Held>(Held{std::move(video), std::move(reservations_)});
  return std::shared_ptr<const Video>(held, &held->video);
}

MemoryAdmission::Clock::time_point media_deadline(const MemoryAdmission* admission,
                                                 MemoryAdmission::Clock::time_point start, double spent_s) {
  using Clock = MemoryAdmission::Clock;
  const double time_limit = admission ? admission->options().time_limit_s : 0;
  if (time_limit <= 0) return Clock::time_point::max();
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_limit - spent_s));
}

}  // namespace qvl
