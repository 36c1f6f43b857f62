// SqlStore's group commit of single-job writes (sql_store.h, GroupWrite).
#include <vector>

#include "store/internal/sql_store.h"

namespace xpool::store_internal {

Status SqlStore::GroupWrite(const std::function<Status()>& body) {
  PendingWrite pending{&body, InternalError("not committed")};
  writes_.Run(&pending, [this](const std::vector<PendingWrite*>& batch) { CommitWrites(batch); });
  return pending.result;
}

void SqlStore::CommitWrites(const std::vector<PendingWrite*>& batch) {
  std::lock_guard lock(mu_);
  if (batch.size() == 1) {
    batch[0]->result = InTransaction(*batch[0]->body);
    return;
  }
  if (Status begun = db_->Begin(); !begun.ok()) {
    for (PendingWrite* p : batch) p->result = begun;
    return;
  }
  for (PendingWrite* p : batch) {
    if (Status marked = db_->ExecScript("SAVEPOINT xpool_write"); !marked.ok()) {
      p->result = marked;
      continue;
    }
    p->result = (*p->body)();
    if (p->result.ok()) {
      if (Status released = db_->ExecScript("RELEASE SAVEPOINT xpool_write"); !released.ok()) p->result = released;
    } else {
      // Only this write is undone; a failure here leaves the transaction broken, and the commit below says so.
      (void)db_->ExecScript("ROLLBACK TO SAVEPOINT xpool_write; RELEASE SAVEPOINT xpool_write");
    }
  }
  if (Status committed = db_->Commit(); !committed.ok()) {
    db_->Rollback();
    for (PendingWrite* p : batch) {
      if (p->result.ok()) p->result = committed;
    }
  }
}

}  // namespace xpool::store_internal
