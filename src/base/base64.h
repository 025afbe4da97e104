// Base64 encoding (RFC 4648): the standard alphabet with padding (OpenAI's
// encoding_format "base64") and the URL-safe alphabet without padding (API
// key secrets).
#pragma once

#include <cstddef>
#include <string>

namespace pagoda {

enum class Base64Alphabet { kStandard, kUrlNoPad };

std::string Base64Encode(const void* data, size_t n, Base64Alphabet alphabet = Base64Alphabet::kStandard);

}  // namespace pagoda
