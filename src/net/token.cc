#include "net/token.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

namespace shoal::net {

namespace {

std::string Hex(const unsigned char* data, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Result<std::string> RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n <= 0) return Internal("getrandom failed");
    got += static_cast<size_t>(n);
  }
  return Hex(reinterpret_cast<const unsigned char*>(raw.data()), bytes);
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  return Hex(digest, len);
}

std::string HmacSha256Hex(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest, &len);
  return Hex(digest, len);
}

Result<NewToken> MakeToken() {
  NewToken t;
  SHOAL_ASSIGN_OR_RETURN(t.id, RandomHex(6));
  SHOAL_ASSIGN_OR_RETURN(t.secret, RandomHex(20));
  t.text = fmt::format("shoal_{}_{}", t.id, t.secret);
  t.hash = Sha256Hex(t.secret);
  return t;
}

Result<std::pair<std::string, std::string>> SplitToken(std::string_view text) {
  constexpr std::string_view kPrefix = "shoal_";
  if (text.substr(0, kPrefix.size()) != kPrefix)
    return Status(StatusCode::kUnauthenticated, "not a Shoal token");
  text.remove_prefix(kPrefix.size());
  const size_t sep = text.find('_');
  if (sep != 12 || text.size() != 12 + 1 + 40)
    return Status(StatusCode::kUnauthenticated, "malformed token");
  std::string_view id = text.substr(0, sep);
  std::string_view secret = text.substr(sep + 1);
  if (!IsHex(id) || !IsHex(secret)) return Status(StatusCode::kUnauthenticated, "malformed token");
  return std::make_pair(std::string(id), std::string(secret));
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace shoal::net
