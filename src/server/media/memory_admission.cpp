#include "server/media/memory_admission.h"

#include "server/requests/api_error.h"
#include "util/error.h"

namespace qvl {

void ServerMemoryAdmission::refuse_too_large(uint64_t bytes, uint64_t request_holds, uint64_t room,
                                             const std::string& param) const {
  throw ApiError(413, "image_too_large",
                 cat("decoding this image needs ", bytes, " bytes",
                     request_holds > 0 ? cat(" beside the ", request_holds, " bytes of the request's earlier images")
                                       : std::string(),
                     ", over the server's image memory budget of ", room, " bytes (", mebibytes(room),
                     ": what --memory-budget leaves beside the KV caches); send smaller images or fewer per request"),
                 param);
}

void ServerMemoryAdmission::refuse_busy(const std::string& what, const std::string& param) const {
  throw ApiError(429, "images_busy",
                 cat("the server is busy decoding other requests' images (", what,
                     "; --memory-budget, --max-image-decodes); retry later, or send smaller images"),
                 param);
}

}  // namespace qvl
