#include "server/pki.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/files.h"

namespace shoal::server {

namespace {

constexpr int kControllerCertDays = 825;

Status MakePrivateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Internal(ErrnoMessage("mkdir " + dir));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Internal(ErrnoMessage("stat " + dir));
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(fmt::format("{} is not a folder", dir));
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    return Internal(ErrnoMessage("chmod " + dir));
  return Status::Ok();
}

// The CA in `dir`, made there when neither of its files exists yet.
Result<net::KeyAndCert> LoadOrCreateCa(const std::string& dir) {
  const std::string cert_file = dir + "/ca.crt";
  const std::string key_file = dir + "/ca.key";
  auto cert = ReadFile(cert_file);
  auto key = ReadFile(key_file);
  if (cert.ok() && key.ok()) {
    net::KeyAndCert ca{*key, *cert};
    // Proves the pair belongs together: a leaf signed with the key must
    // verify against the certificate.
    SHOAL_ASSIGN_OR_RETURN(net::KeyAndCert probe, net::IssueCertificate(ca, "probe", {}, 1));
    if (!net::VerifiedCommonName(ca.cert_pem, probe.cert_pem).ok()) {
      return FailedPrecondition(fmt::format(
          "{} and {} are not one key pair; restore them from a backup", cert_file, key_file));
    }
    return ca;
  }
  if (cert.ok() != key.ok() || (!cert.ok() && cert.status().code() != StatusCode::kNotFound)) {
    return FailedPrecondition(fmt::format(
        "the cluster CA in {} is incomplete or unreadable ({}); restore ca.crt and ca.key from a "
        "backup: every node's certificate depends on them",
        dir, cert.ok() ? key.status().message() : cert.status().message()));
  }
  SHOAL_ASSIGN_OR_RETURN(net::KeyAndCert ca, net::CreateCa("Shoal cluster CA"));
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(key_file, ca.key_pem, 0600));
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(cert_file, ca.cert_pem, 0644));
  return ca;
}

}  // namespace

std::vector<std::string> ControllerNames(const std::string& host,
                                         const std::vector<std::string>& extra) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (!n.empty() && std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  if (host != "0.0.0.0" && host != "::" && host != "[::]") add(host);
  char hostname[256] = {};
  if (::gethostname(hostname, sizeof hostname - 1) == 0) add(hostname);
  add("localhost");
  add("127.0.0.1");
  add("::1");
  for (const std::string& e : extra)
    add(e);
  return names;
}

Result<ControllerPki> LoadOrCreatePki(const std::string& dir,
                                      const std::vector<std::string>& sans) {
  SHOAL_RETURN_IF_ERROR(MakePrivateDir(dir));
  ControllerPki pki;
  pki.dir = dir;
  pki.ca_cert_file = dir + "/ca.crt";
  pki.cert_file = dir + "/server.crt";
  pki.key_file = dir + "/server.key";
  SHOAL_ASSIGN_OR_RETURN(pki.ca, LoadOrCreateCa(dir));
  SHOAL_ASSIGN_OR_RETURN(pki.ca_fingerprint, net::Fingerprint(pki.ca.cert_pem));
  SHOAL_ASSIGN_OR_RETURN(net::KeyAndCert mine, net::IssueCertificate(pki.ca, net::kControllerName,
                                                                     sans, kControllerCertDays));
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(pki.key_file, mine.key_pem, 0600));
  SHOAL_RETURN_IF_ERROR(WriteFileDurably(pki.cert_file, mine.cert_pem, 0644));
  return pki;
}

}  // namespace shoal::server
