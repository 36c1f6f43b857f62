#include "agent/vendor/smi_parsers.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "agent/vendor/internal/smi_table.h"

namespace xpool::agent {
namespace {

using internal::LineRef;
using internal::ParseDeviceIndex;
using internal::ReadSmiTable;
using internal::SmiRow;
using internal::SmiTable;
using internal::UsageTotals;
using internal::Words;

// What a parser read of one device, before it becomes a Device.
struct Seen {
  int index = 0;
  std::string model;
  int64_t memory_mib = 0;  // 0: the tool could not say
  std::string bus_id;      // "" when not printed
  std::string unique_id;   // the tool's own id; "" when not printed
  std::string problem;     // why the device is unhealthy; "" when healthy
};

bool Unprinted(std::string_view value) { return value.empty() || value == "NA" || value == "N/A" || value == "-"; }

std::string Joined(const std::vector<std::string>& words, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < words.size(); ++i) out += (out.empty() ? "" : " ") + words[i];
  return out;
}

// The model without the vendor's name in front ("Iluvatar BI-V100" → "BI-V100"), as NVML's "NVIDIA " is dropped.
std::string WithoutPrefix(std::string model, std::string_view prefix) {
  if (model.size() > prefix.size() && model.compare(0, prefix.size(), prefix) == 0) model.erase(0, prefix.size());
  return model;
}

bool Mentions(const SmiRow& row, size_t cell, std::string_view word) {
  return cell < row.cells.size() && row.cells[cell].find(word) != std::string::npos;
}

// Devices from what was read: uuids (the tool's id, else VENDOR-<bus id>, else VENDOR-<index>; a repeat gets
// "#2", "#3", ...), the vendor's sharing default, and a note per unhealthy device.
std::vector<Device> Finish(Vendor vendor, std::vector<Seen> seen, std::vector<std::string>* notes) {
  std::string prefix(VendorName(vendor));
  std::transform(prefix.begin(), prefix.end(), prefix.begin(), [](unsigned char c) { return std::toupper(c); });
  std::vector<Device> devices;
  std::set<std::string> uuids;
  for (Seen& s : seen) {
    Device d;
    d.vendor = vendor;
    d.index = s.index;
    d.model = s.model.empty() ? "unknown" : s.model;
    d.memory_mib = s.memory_mib;
    d.max_sharers = ProfileFor(vendor).default_max_sharers;
    if (s.memory_mib <= 0 && s.problem.empty()) s.problem = "memory size not readable";
    d.healthy = s.problem.empty();
    d.uuid = !s.unique_id.empty() ? s.unique_id
             : !s.bus_id.empty()  ? prefix + "-" + s.bus_id
                                  : prefix + "-" + std::to_string(s.index);
    for (int n = 2; !uuids.insert(d.uuid).second; ++n)
      d.uuid = d.uuid.substr(0, d.uuid.rfind('#')) + "#" + std::to_string(n);
    if (!d.healthy && notes) notes->push_back("device " + std::to_string(d.index) + ": " + s.problem);
    devices.push_back(std::move(d));
  }
  return devices;
}

Status ExpectHeader(const SmiTable& t, std::string_view tool, size_t rows, size_t cells, std::string_view shape) {
  if (t.header.size() == rows) {
    bool ok = true;
    for (const SmiRow& r : t.header) ok = ok && r.cells.size() >= cells;
    if (ok) return Status::Ok();
  }
  return InvalidArgumentError(LineRef(tool, t.header.front().line) + "expected a header of " + std::string(shape));
}

}  // namespace

Result<std::vector<Device>> ParseNpuSmiInfo(std::string_view text, std::vector<std::string>* notes) {
  constexpr std::string_view kTool = "npu-smi";
  ASSIGN_OR_RETURN(SmiTable t, ReadSmiTable(text, kTool, {"NPU", "Name", "Health"}));
  RETURN_IF_ERROR(ExpectHeader(t, kTool, 2, 3, "two rows, \"NPU Name | Health | ...\" and \"Chip | Bus-Id | ...\""));
  const bool device_column = Mentions(t.header[1], 0, "Device");
  const bool hbm = Mentions(t.header[1], 2, "HBM-Usage");
  std::vector<Seen> seen;
  for (const std::vector<SmiRow>& rec : t.records) {
    const SmiRow& top = rec[0];
    const SmiRow& bottom = rec[1];
    const std::vector<std::string> head = Words(top.cells[0]);
    if (head.size() < 2) {
      return InvalidArgumentError(LineRef(kTool, top.line) + "expected \"<NPU id> <name>\", found \"" + top.cells[0] +
                                  "\"");
    }
    Seen s;
    ASSIGN_OR_RETURN(s.index, ParseDeviceIndex(head[0], LineRef(kTool, top.line) + "NPU id: "));
    s.model = Joined(head, 1, head.size());
    const std::vector<std::string> chip = Words(bottom.cells[0]);
    const std::string chip_where = LineRef(kTool, bottom.line);
    if (chip.empty() || (device_column && chip.size() < 2)) {
      return InvalidArgumentError(chip_where +
                                  (device_column ? "expected \"<chip> <device>\"" : "expected the chip id") +
                                  ", found \"" + bottom.cells[0] + "\"");
    }
    ASSIGN_OR_RETURN(const int chip_id, ParseDeviceIndex(chip[0], chip_where + "chip id: "));
    if (device_column) {
      ASSIGN_OR_RETURN(s.index, ParseDeviceIndex(chip[1], chip_where + "device id: "));
    }
    if (!Unprinted(bottom.cells[1])) s.bus_id = bottom.cells[1];
    const std::vector<int64_t> totals = UsageTotals(bottom.cells[2]);
    if (hbm && totals.size() >= 2 && totals[1] > 0) {
      s.memory_mib = totals[1];
    } else if (!totals.empty()) {
      s.memory_mib = totals[0];
    }
    const std::string& health = top.cells[1];
    if (health != "OK" && health != "Warning") {
      s.problem = "npu-smi health \"" + health + "\" (NPU " + head[0] + ", chip " + std::to_string(chip_id) + ")";
    }
    seen.push_back(std::move(s));
  }
  return Finish(Vendor::kAscend, std::move(seen), notes);
}

Result<std::vector<Device>> ParseCnmon(std::string_view text, std::vector<std::string>* notes) {
  constexpr std::string_view kTool = "cnmon";
  ASSIGN_OR_RETURN(SmiTable t, ReadSmiTable(text, kTool, {"Card", "VF", "Name"}));
  RETURN_IF_ERROR(ExpectHeader(t, kTool, 2, 2, "two rows, \"Card VF Name ... | ...\" and \"... | Memory-Usage\""));
  if (!Mentions(t.header[1], 1, "Memory-Usage")) {
    return InvalidArgumentError(LineRef(kTool, t.header[1].line) + "no Memory-Usage column in the header");
  }
  const bool firmware = Mentions(t.header[0], 0, "Firmware");
  const bool bus = Mentions(t.header[0], 1, "Bus-Id");
  std::vector<Seen> seen;
  for (const std::vector<SmiRow>& rec : t.records) {
    const SmiRow& top = rec[0];
    const std::vector<std::string> head = Words(top.cells[0]);
    const size_t name_end = firmware ? head.size() - 1 : head.size();
    if (head.size() < (firmware ? 4u : 3u)) {
      return InvalidArgumentError(LineRef(kTool, top.line) + "expected \"<card> <VF> <name>" +
                                  (firmware ? " <firmware>" : "") + "\", found \"" + top.cells[0] + "\"");
    }
    Seen s;
    ASSIGN_OR_RETURN(s.index, ParseDeviceIndex(head[0], LineRef(kTool, top.line) + "card: "));
    s.model = Joined(head, 2, name_end);
    if (bus && !Unprinted(top.cells[1])) s.bus_id = top.cells[1];
    if (head[1] != "/" && !s.bus_id.empty()) s.bus_id += "-vf" + head[1];
    const std::vector<int64_t> totals = UsageTotals(rec[1].cells[1]);
    if (!totals.empty()) s.memory_mib = totals[0];
    seen.push_back(std::move(s));
  }
  return Finish(Vendor::kCambricon, std::move(seen), notes);
}

Result<std::vector<Device>> ParseIxsmi(std::string_view text, std::vector<std::string>* notes) {
  constexpr std::string_view kTool = "ixsmi";
  ASSIGN_OR_RETURN(SmiTable t, ReadSmiTable(text, kTool, {"GPU", "Name", "Bus-Id"}));
  RETURN_IF_ERROR(ExpectHeader(t, kTool, 2, 2, "two rows, \"GPU Name | Bus-Id | ...\" and \"... | Memory-Usage\""));
  std::vector<Seen> seen;
  for (const std::vector<SmiRow>& rec : t.records) {
    const SmiRow& top = rec[0];
    const std::vector<std::string> head = Words(top.cells[0]);
    if (head.size() < 2) {
      return InvalidArgumentError(LineRef(kTool, top.line) + "expected \"<GPU> <name>\", found \"" + top.cells[0] +
                                  "\"");
    }
    Seen s;
    ASSIGN_OR_RETURN(s.index, ParseDeviceIndex(head[0], LineRef(kTool, top.line) + "GPU: "));
    s.model = WithoutPrefix(Joined(head, 1, head.size()), "Iluvatar ");
    if (!Unprinted(top.cells[1]) && top.cells[1] != "ERR!") s.bus_id = top.cells[1];
    const std::vector<int64_t> totals = UsageTotals(rec[1].cells[1]);
    if (!totals.empty()) s.memory_mib = totals[0];
    for (const SmiRow& row : rec) {
      for (const std::string& cell : row.cells) {
        if (s.problem.empty() && cell.find("ERR!") != std::string::npos) {
          s.problem = "ixsmi reports ERR! (line " + std::to_string(row.line) + ")";
        }
      }
    }
    seen.push_back(std::move(s));
  }
  return Finish(Vendor::kIluvatar, std::move(seen), notes);
}

Result<std::vector<Device>> ParseMxSmi(std::string_view text, std::vector<std::string>* notes) {
  constexpr std::string_view kTool = "mx-smi";
  ASSIGN_OR_RETURN(SmiTable t, ReadSmiTable(text, kTool, {"GPU", "NAME", "Bus-id"}));
  RETURN_IF_ERROR(ExpectHeader(t, kTool, 2, 2, "two rows, \"GPU NAME | Bus-id | ...\" and \"... | Memory-Usage\""));
  const bool persistence = Mentions(t.header[0], 0, "Persistence-M");
  const bool state = Mentions(t.header[1], 2, "GPU-State");
  std::vector<Seen> seen;
  for (const std::vector<SmiRow>& rec : t.records) {
    const SmiRow& top = rec[0];
    const std::vector<std::string> head = Words(top.cells[0]);
    if (head.size() < (persistence ? 3u : 2u)) {
      return InvalidArgumentError(LineRef(kTool, top.line) + "expected \"<GPU> <name>" +
                                  (persistence ? " <persistence>" : "") + "\", found \"" + top.cells[0] + "\"");
    }
    Seen s;
    ASSIGN_OR_RETURN(s.index, ParseDeviceIndex(head[0], LineRef(kTool, top.line) + "GPU: "));
    s.model = WithoutPrefix(Joined(head, 1, persistence ? head.size() - 1 : head.size()), "MetaX ");
    if (!Unprinted(top.cells[1])) s.bus_id = top.cells[1];
    const std::vector<int64_t> totals = UsageTotals(rec[1].cells[1]);
    if (!totals.empty()) s.memory_mib = totals[0];
    if (state && !rec[1].cells[2].empty() && rec[1].cells[2] != "Available") {
      s.problem = "mx-smi GPU-State \"" + rec[1].cells[2] + "\"";
    }
    seen.push_back(std::move(s));
  }
  // "Attached GPUs : 8" above the table: a table listing fewer was cut short.
  const size_t attached = text.find("Attached GPUs");
  if (attached != std::string_view::npos) {
    const std::string_view line = text.substr(attached, text.find('\n', attached) - attached);
    const std::vector<std::string> words = Words(line.substr(line.find(':') + 1));
    if (line.find(':') != std::string_view::npos && words.size() == 1) {
      auto count = ParseDeviceIndex(words[0], "");
      if (count.ok() && static_cast<size_t>(*count) != seen.size()) {
        return InvalidArgumentError("mx-smi: \"Attached GPUs\" says " + words[0] + ", the table lists " +
                                    std::to_string(seen.size()) + " (output cut short?)");
      }
    }
  }
  return Finish(Vendor::kMetax, std::move(seen), notes);
}

Result<std::vector<Device>> ParseHySmi(std::string_view text, std::vector<std::string>* notes) {
  constexpr std::string_view kTool = "hy-smi";
  std::map<int, std::map<std::string, std::string>> fields;  // index → field → value
  std::vector<int> order;
  int number = 0;
  size_t pos = 0;
  std::string first_line;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::vector<std::string> words = Words(text.substr(pos, end - pos));
    std::string line = Joined(words, 0, words.size());
    pos = end + 1;
    ++number;
    if (line.empty() || line.front() == '=' || line.rfind("WARNING", 0) == 0) continue;
    if (first_line.empty()) first_line = line;
    const size_t open = line.find('[');
    const size_t close = line.find(']');
    const std::string prefix = open == std::string::npos ? "" : line.substr(0, open);
    const size_t colon = close == std::string::npos ? std::string::npos : line.find(':', close);
    const size_t field_end = colon == std::string::npos ? std::string::npos : line.find(':', colon + 1);
    if ((prefix != "DCU" && prefix != "HCU" && prefix != "GPU") || close == std::string::npos ||
        line.find_first_not_of(' ', close + 1) != colon || field_end == std::string::npos) {
      return InvalidArgumentError(LineRef(kTool, number) + "expected \"DCU[<index>] : <field>: <value>\", found \"" +
                                  line + "\"");
    }
    ASSIGN_OR_RETURN(const int index,
                     ParseDeviceIndex(line.substr(open + 1, close - open - 1), LineRef(kTool, number) + "index: "));
    const std::vector<std::string> field = Words(line.substr(colon + 1, field_end - colon - 1));
    const std::vector<std::string> value = Words(line.substr(field_end + 1));
    if (!fields.count(index)) order.push_back(index);
    fields[index][Joined(field, 0, field.size())] = Joined(value, 0, value.size());
  }
  if (order.empty()) {
    return InvalidArgumentError(
        "no device lines (\"DCU[0] : ...\") in the output of hy-smi" +
        (first_line.empty() ? std::string(" (it printed nothing)") : ": \"" + first_line + "\""));
  }
  std::vector<Seen> seen;
  for (int index : order) {
    const std::map<std::string, std::string>& f = fields[index];
    auto get = [&](std::initializer_list<const char*> names) -> std::string {
      for (const char* n : names) {
        if (auto it = f.find(n); it != f.end() && !Unprinted(it->second)) return it->second;
      }
      return "";
    };
    Seen s;
    s.index = index;
    s.model = get({"Card Series", "Card series", "Card SKU"});
    // "0000:05:00.0", or "0000:05:00.0 --> SN: 2500238601000586" (newer hy-smi): the address is the first word.
    const std::vector<std::string> bus = Words(get({"PCI Bus"}));
    if (!bus.empty()) s.bus_id = bus[0];
    s.unique_id = get({"Unique ID"});
    const std::string mib = get({"vram Total Memory (MiB)", "VRAM Total Memory (MiB)"});
    const std::string bytes = get({"vram Total Memory (B)", "VRAM Total Memory (B)"});
    auto number_of = [](const std::string& v) -> int64_t {
      if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) return 0;
      return std::stoll(v);
    };
    s.memory_mib = !mib.empty() ? number_of(mib) : number_of(bytes) >> 20;
    seen.push_back(std::move(s));
  }
  return Finish(Vendor::kHygon, std::move(seen), notes);
}

}  // namespace xpool::agent
