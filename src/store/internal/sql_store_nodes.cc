// SqlStore: placements and allocations, nodes and devices.
#include <map>
#include <nlohmann/json.hpp>

#include "store/internal/sql_rows.h"
#include "store/internal/sql_store.h"

namespace xpool::store_internal {
namespace {

using nlohmann::json;

std::string LabelsToJson(const std::map<std::string, std::string>& labels) {
  return json(labels).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::map<std::string, std::string> LabelsFromJson(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::map<std::string, std::string> out;
  if (!j.is_object()) return out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

// {"n": N, "s": [[a, b, score], ...]} for a < b and score != 0; "" for no topology.
std::string LinksToJson(const LinkTable& links) {
  if (links.empty()) return "";
  json scores = json::array();
  for (int a = 0; a < links.size(); ++a) {
    for (int b = a + 1; b < links.size(); ++b) {
      if (links.Score(a, b) != 0) scores.push_back(json::array({a, b, links.Score(a, b)}));
    }
  }
  return json{{"n", links.size()}, {"s", scores}}.dump();
}

LinkTable LinksFromJson(const std::string& text) {
  if (text.empty()) return {};
  json j = json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("n") || !j["n"].is_number_integer()) return {};
  const int n = j["n"].get<int>();
  if (n <= 0 || n > 4096) return {};
  LinkTable links(n);
  if (j.contains("s") && j["s"].is_array()) {
    for (const json& e : j["s"]) {
      if (!e.is_array() || e.size() != 3 || !e[0].is_number_integer() || !e[1].is_number_integer() ||
          !e[2].is_number_integer()) {
        continue;
      }
      const int a = e[0].get<int>(), b = e[1].get<int>();
      if (a >= 0 && b >= 0 && a < n && b < n) links.Set(a, b, e[2].get<int>());
    }
  }
  return links;
}

constexpr const char* kNodeColumns =
    "name, labels, cpu_milli, memory_mib, links, ready, cordoned, simulated, registered_us, updated_us";
constexpr const char* kDeviceColumns =
    "node, idx, uuid, vendor, model, memory_mib, compute_milli, max_sharers, numa_node, mode, healthy, cordoned";

Result<Device> DeviceFromRow(const SqlRow& r) {
  Device d;
  d.index = static_cast<int>(ColInt(r, 1));
  d.uuid = ColText(r, 2);
  ASSIGN_OR_RETURN(d.vendor, ParseVendor(ColText(r, 3)));
  d.model = ColText(r, 4);
  d.memory_mib = ColInt(r, 5);
  d.compute_milli = ColInt(r, 6);
  d.max_sharers = static_cast<int>(ColInt(r, 7));
  d.numa_node = static_cast<int>(ColInt(r, 8));
  ASSIGN_OR_RETURN(d.mode, ParseDeviceMode(ColText(r, 9)));
  d.healthy = ColBool(r, 10);
  d.cordoned = ColBool(r, 11);
  return d;
}

}  // namespace

// ---- Placements and allocations ----

Status SqlStore::CommitPlacement(JobId id, const std::vector<AllocationRecord>& allocations, std::string_view reason,
                                 TimeMicros now) {
  return GroupWrite([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r,
                     db_->Query(std::string("SELECT state FROM jobs WHERE id = $1") + std::string(db_->ForUpdate()),
                                {Int(id.value())}));
    if (r.rows.empty()) return NotFoundError("no job with id " + id.ToString());
    ASSIGN_OR_RETURN(JobState from, ParseJobState(ColText(r.rows[0], 0)));
    if (from != JobState::kQueued) {
      return FailedPreconditionError("job " + id.ToString() + " is " + std::string(JobStateName(from)) +
                                     ", only a queued job can be placed");
    }
    ASSIGN_OR_RETURN(SqlResult count, db_->Query("SELECT COUNT(*) FROM tasks WHERE job_id = $1", {Int(id.value())}));
    const int64_t replicas = ColInt(count.rows.at(0), 0);
    std::vector<bool> seen(static_cast<size_t>(replicas), false);
    if (static_cast<int64_t>(allocations.size()) != replicas) {
      return InvalidArgumentError("job " + id.ToString() + " has " + std::to_string(replicas) +
                                  " replicas but the placement has " + std::to_string(allocations.size()));
    }
    for (const AllocationRecord& a : allocations) {
      if (a.replica < 0 || a.replica >= replicas || seen[static_cast<size_t>(a.replica)]) {
        return InvalidArgumentError("placement of job " + id.ToString() + " has a bad or repeated replica " +
                                    std::to_string(a.replica));
      }
      seen[static_cast<size_t>(a.replica)] = true;
      if (a.job.valid() && a.job != id) {
        return InvalidArgumentError("placement of job " + id.ToString() + " names job " + a.job.ToString());
      }
      RETURN_IF_ERROR(
          db_->Query("INSERT INTO allocations (job_id, replica, node, cpu_milli, memory_mib) "
                     "VALUES ($1, $2, $3, $4, $5)",
                     {Int(id.value()), Int(a.replica), Text(a.node), Int(a.cpu_milli), Int(a.memory_mib)}));
      for (size_t i = 0; i < a.devices.size(); ++i) {
        const DeviceGrantRecord& g = a.devices[i];
        RETURN_IF_ERROR(
            db_->Query("INSERT INTO allocation_devices (job_id, replica, ordinal, device_uuid, "
                       "memory_mib, compute_milli) VALUES ($1, $2, $3, $4, $5, $6)",
                       {Int(id.value()), Int(a.replica), Int(static_cast<int64_t>(i)), Text(g.device_uuid),
                        Int(g.memory_mib), Int(g.compute_milli)}));
      }
      RETURN_IF_ERROR(db_->Query(
          "UPDATE tasks SET state = $3, node = $4, updated_us = $5 WHERE job_id = $1 "
          "AND replica = $2",
          {Int(id.value()), Int(a.replica), Text(JobStateName(JobState::kScheduled)), Text(a.node), Int(now)}));
    }
    RETURN_IF_ERROR(
        db_->Query("UPDATE jobs SET state = $2, updated_us = $3, pending_reason = '', "
                   "state_reason = $4 WHERE id = $1",
                   {Int(id.value()), Text(JobStateName(JobState::kScheduled)), Int(now), Text(ClipReason(reason))}));
    EventRecord e;
    e.time_us = now;
    e.job = id;
    e.kind = "placed";
    e.from = JobState::kQueued;
    e.to = JobState::kScheduled;
    e.reason = std::string(reason);
    return InsertEvent(e, nullptr);
  });
}

Result<std::vector<AllocationRecord>> SqlStore::LoadAllocations(SqlBackend& db, std::string_view where,
                                                                const std::vector<SqlValue>& params) {
  ASSIGN_OR_RETURN(SqlResult a, db.Query("SELECT job_id, replica, node, cpu_milli, memory_mib FROM allocations " +
                                             std::string(where) + " ORDER BY job_id, replica",
                                         params));
  ASSIGN_OR_RETURN(SqlResult d, db.Query("SELECT job_id, replica, device_uuid, memory_mib, compute_milli FROM "
                                         "allocation_devices " +
                                             std::string(where) + " ORDER BY job_id, replica, ordinal",
                                         params));
  std::vector<AllocationRecord> out;
  std::map<std::pair<int64_t, int64_t>, size_t> index;
  for (const SqlRow& row : a.rows) {
    AllocationRecord rec;
    rec.job = JobId(ColInt(row, 0));
    rec.replica = static_cast<int>(ColInt(row, 1));
    rec.node = ColText(row, 2);
    rec.cpu_milli = ColInt(row, 3);
    rec.memory_mib = ColInt(row, 4);
    index[{rec.job.value(), rec.replica}] = out.size();
    out.push_back(std::move(rec));
  }
  for (const SqlRow& row : d.rows) {
    auto it = index.find({ColInt(row, 0), ColInt(row, 1)});
    if (it == index.end()) continue;  // cannot happen with the foreign key; tolerate rather than fail reads
    out[it->second].devices.push_back({ColText(row, 2), ColInt(row, 3), ColInt(row, 4)});
  }
  return out;
}

Result<std::vector<AllocationRecord>> SqlStore::ListAllocations() {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  std::vector<AllocationRecord> out;
  RETURN_IF_ERROR(InReadTransaction(db, [&]() -> Status {
    ASSIGN_OR_RETURN(out, LoadAllocations(db, "", {}));
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<AllocationRecord>> SqlStore::JobAllocations(JobId job) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  std::vector<AllocationRecord> out;
  RETURN_IF_ERROR(InReadTransaction(db, [&]() -> Status {
    ASSIGN_OR_RETURN(out, LoadAllocations(db, "WHERE job_id = $1", {Int(job.value())}));
    return Status::Ok();
  }));
  return out;
}

Result<std::vector<AllocationRecord>> SqlStore::JobAllocationsBetween(JobId first, JobId last) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  std::vector<AllocationRecord> out;
  RETURN_IF_ERROR(InReadTransaction(db, [&]() -> Status {
    ASSIGN_OR_RETURN(out,
                     LoadAllocations(db, "WHERE job_id BETWEEN $1 AND $2", {Int(first.value()), Int(last.value())}));
    return Status::Ok();
  }));
  return out;
}

// ---- Nodes and devices ----

Status SqlStore::UpsertNode(const Node& node, TimeMicros now) {
  RETURN_IF_ERROR(ValidateNode(node));
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    const std::vector<SqlValue> values = {Text(node.name),
                                          Text(LabelsToJson(node.labels)),
                                          Int(node.cpu_milli),
                                          Int(node.memory_mib),
                                          Text(LinksToJson(node.links)),
                                          Bool(node.ready),
                                          Bool(node.cordoned),
                                          Bool(node.simulated),
                                          Int(now)};
    RETURN_IF_ERROR(
        db_->Query("INSERT INTO nodes (name, labels, cpu_milli, memory_mib, links, ready, cordoned, "
                   "simulated, registered_us, updated_us) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                   "$9) ON CONFLICT (name) DO UPDATE SET labels = excluded.labels, cpu_milli = "
                   "excluded.cpu_milli, memory_mib = excluded.memory_mib, links = excluded.links, "
                   "ready = excluded.ready, cordoned = excluded.cordoned, simulated = "
                   "excluded.simulated, updated_us = excluded.updated_us",
                   values));
    RETURN_IF_ERROR(db_->Query("DELETE FROM devices WHERE node = $1", {Text(node.name)}));
    for (size_t i = 0; i < node.devices.size(); ++i) {
      const Device& d = node.devices[i];
      Result<SqlResult> r = db_->Query(
          "INSERT INTO devices (node, idx, uuid, vendor, model, memory_mib, compute_milli, max_sharers, "
          "numa_node, mode, healthy, cordoned) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
          {Text(node.name), Int(static_cast<int64_t>(i)), Text(d.uuid), Text(VendorName(d.vendor)), Text(d.model),
           Int(d.memory_mib), Int(d.compute_milli), Int(d.max_sharers), Int(d.numa_node), Text(DeviceModeName(d.mode)),
           Bool(d.healthy), Bool(d.cordoned)});
      if (r.status().code() == StatusCode::kAlreadyExists) {
        return AlreadyExistsError("device " + Printable(d.uuid) + " of node " + Printable(node.name) +
                                  " is already registered");
      }
      RETURN_IF_ERROR(r);
    }
    return Status::Ok();
  });
}

Result<std::vector<NodeRecord>> SqlStore::LoadNodes(SqlBackend& db, std::string_view where,
                                                    const std::vector<SqlValue>& params) {
  ASSIGN_OR_RETURN(
      SqlResult n,
      db.Query(std::string("SELECT ") + kNodeColumns + " FROM nodes " + std::string(where) + " ORDER BY name", params));
  ASSIGN_OR_RETURN(SqlResult d, db.Query(std::string("SELECT ") + kDeviceColumns + " FROM devices " +
                                             (where.empty() ? "" : "WHERE node = $1") + " ORDER BY node, idx",
                                         params));
  std::vector<NodeRecord> out;
  std::map<std::string, size_t> index;
  for (const SqlRow& row : n.rows) {
    NodeRecord rec;
    rec.node.name = ColText(row, 0);
    rec.node.labels = LabelsFromJson(ColText(row, 1));
    rec.node.cpu_milli = ColInt(row, 2);
    rec.node.memory_mib = ColInt(row, 3);
    rec.node.links = LinksFromJson(ColText(row, 4));
    rec.node.ready = ColBool(row, 5);
    rec.node.cordoned = ColBool(row, 6);
    rec.node.simulated = ColBool(row, 7);
    rec.registered_us = ColInt(row, 8);
    rec.updated_us = ColInt(row, 9);
    index[rec.node.name] = out.size();
    out.push_back(std::move(rec));
  }
  for (const SqlRow& row : d.rows) {
    auto it = index.find(ColText(row, 0));
    if (it == index.end()) continue;
    ASSIGN_OR_RETURN(Device device, DeviceFromRow(row));
    out[it->second].node.devices.push_back(std::move(device));
  }
  return out;
}

Result<NodeRecord> SqlStore::GetNode(std::string_view name) {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  std::vector<NodeRecord> nodes;
  RETURN_IF_ERROR(InReadTransaction(db, [&]() -> Status {
    ASSIGN_OR_RETURN(nodes, LoadNodes(db, "WHERE name = $1", {Text(name)}));
    return Status::Ok();
  }));
  if (nodes.empty()) return NotFoundError("no node named '" + Printable(name) + "'");
  return std::move(nodes[0]);
}

Result<std::vector<NodeRecord>> SqlStore::ListNodes() {
  ReadConn conn(*this);
  SqlBackend& db = conn.db();
  std::vector<NodeRecord> nodes;
  RETURN_IF_ERROR(InReadTransaction(db, [&]() -> Status {
    ASSIGN_OR_RETURN(nodes, LoadNodes(db, "", {}));
    return Status::Ok();
  }));
  return nodes;
}

Status SqlStore::SetNodeFlag(std::string_view column, std::string_view name, bool value, TimeMicros now) {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    ASSIGN_OR_RETURN(SqlResult r,
                     db_->Query("UPDATE nodes SET " + std::string(column) + " = $2, updated_us = $3 WHERE name = $1",
                                {Text(name), Bool(value), Int(now)}));
    if (r.affected == 0) return NotFoundError("no node named '" + Printable(name) + "'");
    return Status::Ok();
  });
}

Status SqlStore::SetNodeCordoned(std::string_view name, bool cordoned, TimeMicros now) {
  return SetNodeFlag("cordoned", name, cordoned, now);
}

Status SqlStore::SetNodeReady(std::string_view name, bool ready, TimeMicros now) {
  return SetNodeFlag("ready", name, ready, now);
}

Status SqlStore::DeleteNode(std::string_view name) {
  std::lock_guard lock(mu_);
  return InTransaction([&]() -> Status {
    RETURN_IF_ERROR(db_->Query("DELETE FROM devices WHERE node = $1", {Text(name)}));
    ASSIGN_OR_RETURN(SqlResult r, db_->Query("DELETE FROM nodes WHERE name = $1", {Text(name)}));
    if (r.affected == 0) return NotFoundError("no node named '" + Printable(name) + "'");
    return Status::Ok();
  });
}

}  // namespace xpool::store_internal
