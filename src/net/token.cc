#include "net/token.h"

#include <fmt/format.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <sys/random.h>

#include <cstdlib>
#include <memory>

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

// SHA-256 and HMAC, looked up once. OpenSSL 3 looks an algorithm up in its
// providers on every EVP_sha256()/HMAC() call, under a lock that every
// request thread takes: a third of a token check's time, and more with
// many threads (every API request checks a token; every beat on a node
// session checks an HMAC). Fetched objects are thread-safe to share.
const EVP_MD* Sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md != nullptr ? md : EVP_sha256();
}

EVP_MAC* Hmac() {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  return mac;
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
  EVP_Digest(data.data(), data.size(), digest, &len, Sha256(), nullptr);
  return Hex(digest, len);
}

std::string HmacSha256Hex(std::string_view key, std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  size_t len = 0;
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
      OSSL_PARAM_construct_end()};
  std::unique_ptr<EVP_MAC_CTX, void (*)(EVP_MAC_CTX*)> ctx(
      Hmac() != nullptr ? EVP_MAC_CTX_new(Hmac()) : nullptr, EVP_MAC_CTX_free);
  // A null key would mean "the key set before"; an empty one is a key.
  static const unsigned char kNoBytes[1] = {0};
  const auto* key_bytes =
      key.empty() ? kNoBytes : reinterpret_cast<const unsigned char*>(key.data());
  if (!ctx || EVP_MAC_init(ctx.get(), key_bytes, key.size(), params) != 1 ||
      EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(data.data()), data.size()) !=
          1 ||
      EVP_MAC_final(ctx.get(), digest, &len, sizeof digest) != 1) {
    std::abort();  // OpenSSL without HMAC-SHA256: nothing can be checked
  }
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
