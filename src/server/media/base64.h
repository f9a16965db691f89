// Strict base64 (RFC 4648, standard alphabet, '=' padding optional): data: URIs.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

// The decoded size of `encoded` (an upper bound until padding is known).
size_t base64_decoded_size(std::string_view encoded);
// nullopt on any character outside the alphabet or a malformed ending;
// `bad_offset` then holds the offending byte's offset.
std::optional<std::vector<uint8_t>> base64_decode(std::string_view encoded, size_t* bad_offset = nullptr);
// With '=' padding: what the server puts in the data: URLs it sends (thumbnails).
std::string base64_encode(std::span<const uint8_t> bytes);

}  // namespace qvl
