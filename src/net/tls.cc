#include "net/tls.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <memory>

namespace shoal::net {
namespace {

template <auto Free>
struct Deleter {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using RequestPtr = std::unique_ptr<X509_REQ, Deleter<X509_REQ_free>>;

constexpr int kCaDays = 3650;

Status TlsError(std::string_view what) {
  return Status(StatusCode::kInternal, fmt::format("{} failed (OpenSSL)", what));
}

Result<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return TlsError("EC P-256 key generation");
  return key;
}

Result<KeyPtr> ReadKey(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) return InvalidArgument("not a PEM private key");
  return key;
}

Result<CertPtr> ReadCert(std::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  CertPtr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) return InvalidArgument("not a PEM certificate");
  return cert;
}

std::string CommonName(X509* cert) {
  char name[256] = {};
  const int n =
      X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
  return n > 0 ? std::string(name, static_cast<size_t>(n)) : std::string();
}

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

bool IsIp(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// A certificate for `key` named `cn`, signed by `issuer_key` (self-signed
// when `issuer` is null).
Result<CertPtr> Sign(EVP_PKEY* key, std::string_view cn, X509* issuer, EVP_PKEY* issuer_key,
                     int days, const std::vector<std::pair<int, std::string>>& extensions) {
  CertPtr cert(X509_new());
  if (!cert) return TlsError("X509_new");
  X509_set_version(cert.get(), 2);
  // 16 random bytes as the serial, as RFC 5280 allows up to 20.
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return TlsError("RAND_bytes");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);  // tolerate small clock skew
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 86400);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn_text(cn);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Shoal"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn_text.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  for (const auto& [nid, value] : extensions) {
    if (!AddExtension(cert.get(), signer, nid, value))
      return InvalidArgument(fmt::format("bad certificate extension '{}'", value));
  }
  if (X509_sign(cert.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0)
    return TlsError("X509_sign");
  return cert;
}

std::string BioText(BIO* b) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  return std::string(data, static_cast<size_t>(n));
}

// A host name as DNS spells it (letters, digits, '-', '.'): nothing that
// OpenSSL's configuration syntax would read as another name.
bool IsDnsName(const std::string& s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  });
}

// "DNS:a,IP:10.0.0.1" for subjectAltName.
Result<std::string> AltNames(const std::vector<std::string>& sans) {
  if (sans.size() > 32) return InvalidArgument("at most 32 subject alternative names");
  std::string alt;
  for (const std::string& san : sans) {
    const bool ip = IsIp(san);
    if (!ip && !IsDnsName(san))
      return InvalidArgument(fmt::format("bad subject alternative name '{}'", san));
    alt += fmt::format("{}{}:{}", alt.empty() ? "" : ",", ip ? "IP" : "DNS", san);
  }
  return alt;
}

// The extensions of a leaf certificate (a node's or the controller's): good
// for TLS servers and clients alike, never a CA.
Result<std::vector<std::pair<int, std::string>>> LeafExtensions(
    const std::vector<std::string>& sans) {
  SHOAL_ASSIGN_OR_RETURN(std::string alt, AltNames(sans));
  std::vector<std::pair<int, std::string>> ext = {
      {NID_basic_constraints, "critical,CA:FALSE"},
      {NID_key_usage, "critical,digitalSignature,keyAgreement"},
      {NID_ext_key_usage, "serverAuth,clientAuth"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!alt.empty()) ext.emplace_back(NID_subject_alt_name, alt);
  return ext;
}

Result<KeyAndCert> ToPem(EVP_PKEY* key, X509* cert) {
  BioPtr kb(BIO_new(BIO_s_mem()));
  BioPtr cb(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(kb.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      PEM_write_bio_X509(cb.get(), cert) != 1) {
    return TlsError("PEM encoding");
  }
  return KeyAndCert{BioText(kb.get()), BioText(cb.get())};
}

}  // namespace

Result<KeyAndCert> CreateCa(std::string_view common_name) {
  SHOAL_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  SHOAL_ASSIGN_OR_RETURN(CertPtr cert, Sign(key.get(), common_name, nullptr, nullptr, kCaDays,
                                            {{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                                             {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                             {NID_subject_key_identifier, "hash"}}));
  return ToPem(key.get(), cert.get());
}

Result<KeyAndCert> IssueCertificate(const KeyAndCert& ca, std::string_view common_name,
                                    const std::vector<std::string>& sans, int days) {
  if (common_name.empty()) return InvalidArgument("a certificate needs a common name");
  SHOAL_ASSIGN_OR_RETURN(KeyPtr ca_key, ReadKey(ca.key_pem));
  SHOAL_ASSIGN_OR_RETURN(CertPtr ca_cert, ReadCert(ca.cert_pem));
  SHOAL_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  SHOAL_ASSIGN_OR_RETURN(auto ext, LeafExtensions(sans));
  SHOAL_ASSIGN_OR_RETURN(CertPtr cert,
                         Sign(key.get(), common_name, ca_cert.get(), ca_key.get(), days, ext));
  return ToPem(key.get(), cert.get());
}

Result<KeyAndRequest> CreateKeyAndRequest(std::string_view common_name) {
  if (common_name.empty()) return InvalidArgument("a certificate request needs a common name");
  SHOAL_ASSIGN_OR_RETURN(KeyPtr key, NewKey());
  RequestPtr req(X509_REQ_new());
  if (!req) return TlsError("X509_REQ_new");
  const std::string cn(common_name);
  X509_NAME* name = X509_REQ_get_subject_name(req.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  if (X509_REQ_set_pubkey(req.get(), key.get()) != 1 ||
      X509_REQ_sign(req.get(), key.get(), EVP_sha256()) == 0) {
    return TlsError("X509_REQ_sign");
  }
  BioPtr kb(BIO_new(BIO_s_mem()));
  BioPtr rb(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      PEM_write_bio_X509_REQ(rb.get(), req.get()) != 1) {
    return TlsError("PEM encoding");
  }
  return KeyAndRequest{BioText(kb.get()), BioText(rb.get())};
}

Result<std::string> SignRequest(const KeyAndCert& ca, std::string_view csr_pem,
                                std::string_view common_name, const std::vector<std::string>& sans,
                                int days) {
  if (common_name.empty()) return InvalidArgument("a certificate needs a common name");
  if (csr_pem.size() > 64 * 1024) return InvalidArgument("the certificate request is too large");
  SHOAL_ASSIGN_OR_RETURN(KeyPtr ca_key, ReadKey(ca.key_pem));
  SHOAL_ASSIGN_OR_RETURN(CertPtr ca_cert, ReadCert(ca.cert_pem));
  BioPtr bio(BIO_new_mem_buf(csr_pem.data(), static_cast<int>(csr_pem.size())));
  RequestPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req) return InvalidArgument("not a PEM certificate request");
  KeyPtr key(X509_REQ_get_pubkey(req.get()));
  if (!key || X509_REQ_verify(req.get(), key.get()) != 1)
    return InvalidArgument("the certificate request's signature does not verify");
  SHOAL_ASSIGN_OR_RETURN(auto ext, LeafExtensions(sans));
  SHOAL_ASSIGN_OR_RETURN(CertPtr cert,
                         Sign(key.get(), common_name, ca_cert.get(), ca_key.get(), days, ext));
  BioPtr cb(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cb.get(), cert.get()) != 1) return TlsError("PEM encoding");
  return BioText(cb.get());
}

namespace {

std::string DigestText(X509* cert) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (X509_digest(cert, EVP_sha256(), md, &n) != 1) return "";
  std::string out;
  out.reserve(n * 3);
  for (unsigned int i = 0; i < n; ++i)
    out += fmt::format("{}{:02X}", i == 0 ? "" : ":", md[i]);
  return out;
}

}  // namespace

Result<std::string> Fingerprint(std::string_view cert_pem) {
  SHOAL_ASSIGN_OR_RETURN(CertPtr cert, ReadCert(cert_pem));
  std::string out = DigestText(cert.get());
  if (out.empty()) return TlsError("X509_digest");
  return out;
}

Result<std::string> VerifiedCommonName(std::string_view ca_pem, std::string_view cert_pem) {
  SHOAL_ASSIGN_OR_RETURN(CertPtr ca, ReadCert(ca_pem));
  SHOAL_ASSIGN_OR_RETURN(CertPtr cert, ReadCert(cert_pem));
  StorePtr store(X509_STORE_new());
  X509_STORE_add_cert(store.get(), ca.get());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr);
  if (X509_verify_cert(ctx.get()) != 1) {
    return Status(StatusCode::kPermissionDenied,
                  fmt::format("certificate not signed by the cluster CA ({})",
                              X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()))));
  }
  return CommonName(cert.get());
}

namespace {

// OpenSSL's chain check, then the leaf's common name against the expected
// one. It runs even when the client asked not to abort on a bad chain
// (httplib does, and reads the result afterwards), so a mismatch is recorded
// as the verification's error.
int VerifyChainAndName(X509_STORE_CTX* store, void* arg) {
  if (X509_verify_cert(store) != 1) return 0;
  const auto* expected = static_cast<const std::string*>(arg);
  X509* leaf = X509_STORE_CTX_get0_cert(store);
  if (leaf == nullptr || CommonName(leaf) != *expected) {
    X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
    return 0;
  }
  return 1;
}

}  // namespace

namespace {

// Where a context's SessionCache is kept (SSL_CTX ex_data).
int SessionCacheIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

SessionCache::~SessionCache() {
  if (session_ != nullptr) SSL_SESSION_free(session_);
}

void SessionCache::Attach(ssl_ctx_st* ctx) {
  SSL_CTX_set_ex_data(ctx, SessionCacheIndex(), this);
  // Sessions go to the callback, not to the context's own store (a client's
  // connections each have a context of their own here).
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, Keep);
  SSL_CTX_set_info_callback(ctx, OfferAtStart);
}

// A connection's handshake is about to write its hello: offer the session
// (cpp-httplib's client has no hook before the handshake but this one).
void SessionCache::OfferAtStart(const ssl_st* ssl, int where, int) {
  if ((where & SSL_CB_HANDSHAKE_START) == 0 || SSL_is_server(ssl) ||
      SSL_get_session(ssl) != nullptr)
    return;
  auto* cache =
      static_cast<SessionCache*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), SessionCacheIndex()));
  if (cache == nullptr) return;
  std::lock_guard<std::mutex> lock(cache->mu_);
  if (cache->session_ == nullptr || SSL_SESSION_is_resumable(cache->session_) != 1) return;
  // A copy: the connection's session is marked not resumable when the
  // connection is freed without a close_notify (OpenSSL's
  // ssl_clear_bad_session), which is how a client drops one the server
  // closed. The cache's own must outlive that.
  SSL_SESSION* copy = SSL_SESSION_dup(cache->session_);
  if (copy == nullptr) return;
  SSL_set_session(const_cast<SSL*>(ssl), copy);
  SSL_SESSION_free(copy);  // the connection holds its own reference
}

// The server gave a session (a ticket): keep a copy of it (see
// OfferAtStart), dropping the one before.
int SessionCache::Keep(ssl_st* ssl, ssl_session_st* session) {
  auto* cache =
      static_cast<SessionCache*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), SessionCacheIndex()));
  if (cache == nullptr) return 0;  // not ours: OpenSSL frees it
  SSL_SESSION* copy = SSL_SESSION_dup(session);
  if (copy == nullptr) return 0;
  std::lock_guard<std::mutex> lock(cache->mu_);
  if (cache->session_ != nullptr) SSL_SESSION_free(cache->session_);
  cache->session_ = copy;
  return 0;  // OpenSSL drops its reference to the connection's own
}

void RequirePeerName(ssl_ctx_st* ctx, const std::string* name) {
  SSL_CTX_set_cert_verify_callback(ctx, VerifyChainAndName, const_cast<std::string*>(name));
}

namespace {

// The connection's peer certificate, once the handshake verified it; null
// otherwise. SSL_get0_peer_certificate: no reference taken (OpenSSL 3).
X509* VerifiedPeer(const SSL* ssl) {
  if (ssl == nullptr) return nullptr;
  // The handshake verified the chain (SSL_VERIFY_PEER); keep to that result.
  if (SSL_get_verify_result(ssl) != X509_V_OK) return nullptr;
  return SSL_get0_peer_certificate(ssl);
}

}  // namespace

PeerCertificate PeerOf(const SSL* ssl) {
  X509* cert = VerifiedPeer(ssl);
  if (cert == nullptr) return {};
  return {CommonName(cert), DigestText(cert)};
}

int64_t PeerNotAfter(const SSL* ssl) {
  X509* cert = VerifiedPeer(ssl);
  std::tm end{};
  if (cert == nullptr || ASN1_TIME_to_tm(X509_get0_notAfter(cert), &end) != 1) return 0;
  return static_cast<int64_t>(timegm(&end));
}

}  // namespace shoal::net
