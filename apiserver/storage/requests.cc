#include "apiserver/storage/requests.h"

namespace mkube::apiserver::storage {
namespace {

// A transaction whose success branch runs only if `key` was last written at `revision`; its
// failure branch reads the key, so a conflict can be told from a deletion.
etcdserverpb::TxnRequest IfModRevision(const std::string& key, int64_t revision) {
  etcdserverpb::TxnRequest t;
  auto* c = t.add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::MOD);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_mod_revision(revision);
  t.add_failure()->mutable_request_range()->set_key(key);
  return t;
}

void SetPut(etcdserverpb::RequestOp* op, const std::string& key, const std::string& value) {
  auto* put = op->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(end.back() + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

etcdserverpb::RangeRequest RangeOfKey(const std::string& key) {
  etcdserverpb::RangeRequest req;
  req.set_key(key);
  return req;
}

etcdserverpb::RangeRequest RangeOfPrefix(const std::string& prefix, int64_t limit) {
  etcdserverpb::RangeRequest req;
  req.set_key(prefix);
  req.set_range_end(PrefixEnd(prefix));
  req.set_limit(limit);
  return req;
}

etcdserverpb::TxnRequest CreateTxn(const std::string& key, const std::string& value) {
  etcdserverpb::TxnRequest t;
  auto* c = t.add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_create_revision(0);
  SetPut(t.add_success(), key, value);
  return t;
}

etcdserverpb::TxnRequest UpdateTxn(const std::string& key, int64_t revision,
                                   const std::string& value) {
  etcdserverpb::TxnRequest t = IfModRevision(key, revision);
  SetPut(t.add_success(), key, value);
  return t;
}

etcdserverpb::TxnRequest DeleteTxn(const std::string& key, int64_t revision) {
  etcdserverpb::TxnRequest t = IfModRevision(key, revision);
  auto* del = t.add_success()->mutable_request_delete_range();
  del->set_key(key);
  del->set_prev_kv(true);
  return t;
}

etcdserverpb::TxnRequest PutTxn(const std::string& key, const std::string& value) {
  etcdserverpb::TxnRequest t;
  SetPut(t.add_success(), key, value);
  return t;
}

etcdserverpb::TxnRequest DeleteKeyTxn(const std::string& key) {
  etcdserverpb::TxnRequest t;
  t.add_success()->mutable_request_delete_range()->set_key(key);
  return t;
}

etcdserverpb::WatchCreateRequest PrefixWatch(const std::string& prefix, int64_t from,
                                             bool prev_kv) {
  etcdserverpb::WatchCreateRequest c;
  c.set_key(prefix);
  c.set_range_end(PrefixEnd(prefix));
  c.set_start_revision(from);
  c.set_prev_kv(prev_kv);
  return c;
}

}  // namespace mkube::apiserver::storage
