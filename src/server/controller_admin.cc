// The Controller's cluster settings and credentials, which admins change:
// partitions, accounts, tokens, and the join of a node with its own
// certificate.
#include <fmt/format.h>

#include <algorithm>

#include "net/token.h"
#include "server/controller.h"
#include "server/controller_internal.h"

namespace shoal::server {

namespace {

using internal::Denied;

}  // namespace

Status Controller::PutPartition(const Identity& who, Partition p) {
  if (!who.admin()) return Denied("only admins change partitions");
  if (p.name.empty()) return InvalidArgument("partition: a name is required");
  auto it = std::find_if(partitions_.begin(), partitions_.end(),
                         [&](const Partition& q) { return q.name == p.name; });
  if (p.is_default) {
    for (Partition& q : partitions_) {
      if (q.is_default && q.name != p.name) {
        q.is_default = false;
        batch_.partitions.push_back(q);
      }
    }
  }
  if (it == partitions_.end()) {
    partitions_.push_back(p);
  } else {
    *it = p;
  }
  if (std::none_of(partitions_.begin(), partitions_.end(),
                   [](const Partition& q) { return q.is_default; })) {
    partitions_.front().is_default = true;
    batch_.partitions.push_back(partitions_.front());
  }
  batch_.partitions.push_back(p);
  RebuildInventory();
  return Status::Ok();
}

Status Controller::PutAccount(const Identity& who, Account a) {
  if (!who.admin()) return Denied("only admins change accounts");
  if (a.name.empty() || !(a.shares > 0))
    return InvalidArgument("account: a name and shares > 0 are required");
  auto it = std::find_if(accounts_.begin(), accounts_.end(),
                         [&](const Account& b) { return b.name == a.name; });
  if (it == accounts_.end()) {
    accounts_.push_back(a);
  } else {
    *it = a;
  }
  batch_.accounts.push_back(a);
  dirty_ = true;
  return Status::Ok();
}

Result<api::Json> Controller::CreateToken(const Identity& who, const TokenRequest& request,
                                          Time now) {
  if (!who.admin()) return Denied("only admins create tokens");
  const std::string& role = request.role;
  if (role != "admin" && role != "user" && role != "node" && role != "join")
    return InvalidArgument("role is admin, user, node or join");
  // A join token is the admin's: it names who let the node in.
  const std::string user = request.user.empty() && role == "join" ? who.user : request.user;
  if (user.empty()) return InvalidArgument("a token needs a user");
  if (user.find_first_of(" \t\n/") != std::string::npos || user.size() > 64) {
    return InvalidArgument("user names are up to 64 characters without spaces or slashes");
  }
  if (request.ttl < Duration(0)) return InvalidArgument("a token's ttl cannot be negative");
  if (!request.node.empty()) {
    if (role != "join" && role != "node")
      return InvalidArgument("only join and node tokens name a node");
    if (!IsValidNodeName(request.node))
      return InvalidArgument(fmt::format("'{}' is not a node name", request.node));
  }
  // An unused join token is a way in: it lasts an hour unless told otherwise.
  const Duration ttl =
      request.ttl == Duration(0) && role == "join" ? std::chrono::hours(1) : request.ttl;
  SHOAL_ASSIGN_OR_RETURN(net::NewToken t, net::MakeToken());
  state::TokenRecord rec{.id = t.id,
                         .secret_hash = t.hash,
                         .user = user,
                         .role = role,
                         .created = now,
                         .revoked = false,
                         .expires = ttl == Duration(0) ? kTimeNever : now + ttl,
                         .node = request.node};
  tokens_[t.id] = rec;
  batch_.tokens.push_back(rec);
  tokens_changed_ = true;
  api::Json out{{"token", t.text}, {"id", t.id}, {"user", user}, {"role", role}};
  if (rec.expires != kTimeNever) out["expires"] = api::TimeToJson(rec.expires);
  if (!rec.node.empty()) out["node"] = rec.node;
  return out;
}

Status Controller::Join(const Identity& who, const std::string& name, const std::string& credential,
                        Time now) {
  if (who.role != "join")
    return Denied("joining takes a join token (shoal token create --role join)");
  auto t = tokens_.find(who.token_id);
  if (t == tokens_.end() || t->second.revoked)
    return Status(StatusCode::kUnauthenticated, "this join token has been used or revoked");
  if (now >= t->second.expires)
    return Status(StatusCode::kUnauthenticated, "this join token has expired");
  if (!t->second.node.empty() && t->second.node != name) {
    return Denied(fmt::format("this join token is for node {}, not {}", t->second.node, name));
  }
  if (!IsValidNodeName(name)) return InvalidArgument(fmt::format("'{}' is not a node name", name));
  if (credential.empty()) return InvalidArgument("a join needs the new certificate's fingerprint");
  auto n = nodes_.find(name);
  if (n != nodes_.end() && !n->second.node.credential.empty() && t->second.node != name) {
    return Denied(fmt::format(
        "node {} has joined already; to re-key it, use a join token made for it (--node {})", name,
        name));
  }
  t->second.revoked = true;  // once only
  batch_.tokens.push_back(t->second);
  tokens_changed_ = true;
  if (n != nodes_.end()) {
    n->second.node.credential = credential;
    RecordNode(n->second);
    dirty_ = true;
  }
  return Status::Ok();
}

Status Controller::RevokeToken(const Identity& who, const std::string& id) {
  if (!who.admin()) return Denied("only admins revoke tokens");
  auto it = tokens_.find(id);
  if (it == tokens_.end()) return NotFound(fmt::format("no token {}", id));
  it->second.revoked = true;
  batch_.tokens.push_back(it->second);
  tokens_changed_ = true;
  return Status::Ok();
}

}  // namespace shoal::server
