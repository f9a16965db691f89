// The server's memory admission (media/admission.h), one for every request
// and the engine's KV caches: a request whose media can never fit what
// --memory-budget leaves beside the KV caches is 413
// image_too_large at once; one that waits past its deadline for the budget
// or a decode place (--max-image-decodes) is 429 images_busy, with
// Retry-After.
#pragma once

#include "media/admission.h"

namespace qvl {

class ServerMemoryAdmission final : public MemoryAdmission {
 public:
  using MemoryAdmission::MemoryAdmission;

 protected:
  [[noreturn]] void refuse_too_large(uint64_t bytes, uint64_t request_holds, uint64_t room,
                                     const std::string& param) const override;
  [[noreturn]] void refuse_busy(const std::string& what, const std::string& param) const override;
};

}  // namespace qvl
