#include "server/requests/api_error.h"

namespace qvl {

const char* ApiError::type() const {
  switch (status_) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "unavailable_error";
    case 504: return "timeout_error";
    default: return status_ >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", what()}, {"type", type()}, {"param", nullptr}, {"code", code_}};
  if (!param_.empty()) e["param"] = param_;
  return {{"error", e}};
}

void bad_request(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, code, message, param);
}

}  // namespace qvl
