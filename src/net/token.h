// API tokens: "shoal_<id>_<secret>". The id names the token in listings and
// revocations; only a SHA-256 hash of the secret is ever stored, and secrets
// are compared in constant time.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace shoal::net {

struct NewToken {
  std::string id;      // 12 hex characters
  std::string secret;  // 40 hex characters
  std::string text;    // what the user keeps: shoal_<id>_<secret>
  std::string hash;    // hex SHA-256 of the secret, what the store keeps
};

// A fresh token from the kernel's random source.
Result<NewToken> MakeToken();

// Splits a token's text into id and secret; an error for anything else.
Result<std::pair<std::string, std::string>> SplitToken(std::string_view text);

// Hex SHA-256.
std::string Sha256Hex(std::string_view data);

// Hex HMAC-SHA-256 of `data` under `key` (job tokens).
std::string HmacSha256Hex(std::string_view key, std::string_view data);

bool ConstantTimeEquals(std::string_view a, std::string_view b);

// `n` random bytes as hex, from getrandom(2).
Result<std::string> RandomHex(size_t bytes);

}  // namespace shoal::net
