// The process's memory budget, and media work admitted like compute: one
// budget for decoded media and KV caches shared by every request being
// parsed, waiting or running, and a cap on decodes running at once (images,
// video frames and PDF pages alike). A decoder reserves what the header's
// dimensions will cost before it allocates a pixel (DecodeBudget); the
// reservation travels with the decoded pixels and is returned when they are
// dropped — by the engine right after preprocessing (VisionStage), or when
// the request fails. The engine reserves its slots' KV caches for as long as
// it lives (reserve_standing), so what they may commit is counted before any
// request runs: the server, the CLI and the C API (qvl_model_params) each
// hold one admission and hand it to both their media intake and the engine.
//
// Policy: a request whose own images can never fit the budget is refused at
// once; one that would fit but finds the budget (or every decode place)
// taken waits, at most until its deadline, and is then refused as busy.
// Nothing is allocated before admission, so an over-budget request is never
// an out-of-memory failure. How a refusal reaches the client is the front
// end's: the server answers 413 / 429 (server/media/memory_admission.h), the C API
// QVL_ERR_OUT_OF_MEMORY, the CLI a one-line error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "image/image.h"
#include "util/error.h"
#include "video/video.h"

namespace qvl {

// Media's share of an automatic budget.
inline constexpr uint64_t kAutoMediaBudget = uint64_t{1} << 30;

struct MemoryAdmissionOptions {
  // Bytes held at once across requests: decoded media (pixels kept until the
  // engine preprocesses them, plus the decoders' working buffers) and the
  // engine's KV caches. Unset: automatic, kAutoMediaBudget for media on top
  // of whatever KV caches the engine reserves.
  std::optional<uint64_t> memory_budget_bytes;
  int max_decodes = 2;  // images decoded at once across requests
  // One request's image work (fetching, waiting for admission, decoding),
  // from its first image; each decode gets what is left.
  double time_limit_s = 30;
};

// A budget too small for what must be held at once (the engine's KV caches
// beside the media already held): a qvl::Error a front end reports as it is.
class MemoryBudgetExceeded : public Error {
 public:
  using Error::Error;
};

// An admission's refusal by default: not a qvl::Error, so a decoder that
// calls DecodeBudget::reserve lets it through as it is.
class MediaRefusal : public std::runtime_error {
 public:
  enum class Kind { TooLarge, Busy };
  MediaRefusal(Kind kind, const std::string& message, std::string param)
      : std::runtime_error(message), kind_(kind), param_(std::move(param)) {}
  Kind kind() const { return kind_; }
  const std::string& param() const { return param_; }

 private:
  Kind kind_;
  std::string param_;
};

class MemoryAdmission {
 public:
  using Clock = std::chrono::steady_clock;

  explicit MemoryAdmission(const MemoryAdmissionOptions& options)
      : options_(options), budget_(options.memory_budget_bytes.value_or(kAutoMediaBudget)) {}
  virtual ~MemoryAdmission() = default;
  MemoryAdmission(const MemoryAdmission&) = delete;
  MemoryAdmission& operator=(const MemoryAdmission&) = delete;

  // A share of the memory budget, returned when destroyed.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& o) noexcept;
    Reservation& operator=(Reservation&& o) noexcept;
    ~Reservation();
    uint64_t bytes() const { return bytes_; }
    // Gives back what is over `bytes` (the decoders' working buffers, once
    // only the pixels are left).
    void shrink_to(uint64_t bytes);

   private:
    friend class MemoryAdmission;
    Reservation(MemoryAdmission* owner, uint64_t bytes, bool standing = false)
        : owner_(owner), bytes_(bytes), standing_(standing) {}
    MemoryAdmission* owner_ = nullptr;
    uint64_t bytes_ = 0;
    bool standing_ = false;  // reserve_standing's
  };

  // One of the decode places, returned when destroyed.
  class DecodeTurn {
   public:
    DecodeTurn(DecodeTurn&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
    DecodeTurn& operator=(DecodeTurn&&) = delete;
    ~DecodeTurn();

   private:
    friend class MemoryAdmission;
    explicit DecodeTurn(MemoryAdmission* owner) : owner_(owner) {}
    MemoryAdmission* owner_;
  };

  // Refuses (refuse_too_large) when `bytes` plus what this request already
  // holds exceed what the budget leaves beside the standing reservations,
  // (refuse_busy) when `deadline` passes first.
  Reservation reserve(uint64_t bytes, uint64_t request_holds, Clock::time_point deadline, const std::string& param);
  DecodeTurn decode_turn(Clock::time_point deadline, const std::string& param);
  // Memory held for as long as the reservation lives (the engine's KV
  // caches), taken at once, never waited for: an automatic budget grows by
  // it, a set one must have it free now (nullopt when it has not).
  std::optional<Reservation> reserve_standing(uint64_t bytes);
  // Memory a running request commits as it goes (the KV caches of its
  // choices after the first), taken at once even past the budget: its
  // caller checked it against media_budget() before the request ran, and
  // media waits while the budget is over.
  Reservation reserve_now(uint64_t bytes);

  const MemoryAdmissionOptions& options() const { return options_; }
  bool automatic() const { return !options_.memory_budget_bytes; }
  uint64_t budget() const;          // the whole, standing reservations included
  uint64_t standing_bytes() const;  // held by reserve_standing
  uint64_t media_budget() const;    // what the budget leaves beside them
  uint64_t reserved_bytes() const;  // every reservation, standing ones included
  int decoding() const;

 protected:
  // Each throws; `param` names the request's part. By default a MediaRefusal.
  // `room`: what the budget leaves beside the standing reservations.
  [[noreturn]] virtual void refuse_too_large(uint64_t bytes, uint64_t request_holds, uint64_t room,
                                             const std::string& param) const;
  // `what` says what is taken.
  [[noreturn]] virtual void refuse_busy(const std::string& what, const std::string& param) const;

 private:
  void release(uint64_t bytes, bool standing);
  void end_decode();

  const MemoryAdmissionOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t budget_;        // grows and shrinks with the standing reservations when automatic
  uint64_t standing_ = 0;  // of reserved_
  uint64_t reserved_ = 0;
  int decoding_ = 0;
};

// When a request's media decoding must have ended: the admission's image
// time limit from `start`, less `spent_s` the request's earlier media took;
// never without an admission or a limit.
MemoryAdmission::Clock::time_point media_deadline(const MemoryAdmission* admission,
                                                 MemoryAdmission::Clock::time_point start, double spent_s = 0);

// One medium's admission as its decoder sees it: the DecodeBudget whose
// reserve() the decoder calls from the header (once for an image or a clip,
// once per frame of a frame list), holding every reservation it takes until
// the pixels are handed over with them (hold()).
class MediaReserver final : public DecodeBudget {
 public:
  MediaReserver(MemoryAdmission& admission, uint64_t request_holds, MemoryAdmission::Clock::time_point deadline,
                std::string param)
      : admission_(admission), request_holds_(request_holds), deadline_(deadline), param_(std::move(param)) {}

  void reserve(uint64_t peak_bytes) override;
  // The decoded image or video, sharing ownership with its reservations
  // (shrunk to its pixels): the budget is returned when the last reference goes.
  std::shared_ptr<const Image> hold(Image image);
  std::shared_ptr<const Video> hold(Video video);

 private:
  // Gives back what the reservations hold over `bytes`.
  void shrink_to(uint64_t bytes);

  MemoryAdmission& admission_;
  uint64_t request_holds_;
  uint64_t reserved_ = 0;
  MemoryAdmission::Clock::time_point deadline_;
  std::string param_;
  std::vector<MemoryAdmission::Reservation> reservations_;
};

// "12 MiB", for messages about the budget.
std::string mebibytes(uint64_t bytes);

// Bytes an image's pixels take while held.
inline uint64_t held_bytes(const Image& image) { return image.rgb.capacity(); }
inline uint64_t held_bytes(const Video& video) {
  uint64_t n = 0;
  for (const Image& f : video.frames) n += held_bytes(f);
  return n;
}

}  // namespace qvl
