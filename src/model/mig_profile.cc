// MIG profile tables and placement rules. Sources: NVIDIA's Multi-Instance GPU user guide ("Supported GPUs",
// "Supported MIG Profiles": fractions of memory and SMs, instances available) and the placements
// `nvidia-smi mig -lgipp` reports ("{0,2,4,6}:2" = start slots {0,2,4,6}, 2 slots each). The GH200 144GB, GB200
// and B300 tables take their names and instance counts from the `nvidia-smi mig -lgip` listings and profile lists
// of NVIDIA's GPU Operator (release notes, default mig-parted config) and mig-parted.
#include "model/mig_profile.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <tuple>
#include <vector>

namespace xpool {
namespace {

constexpr int64_t kGiB = 1024;

// Start slots shared by the 8-slot models (A100, H100, H200) ...
constexpr int kEvery7[] = {0, 1, 2, 3, 4, 5, 6};
constexpr int kEven4[] = {0, 2, 4, 6};
constexpr int kEven3[] = {0, 2, 4};
constexpr int kHalves8[] = {0, 4};
constexpr int kFirst[] = {0};
// ... and by the 4-slot A30.
constexpr int kEvery4[] = {0, 1, 2, 3};
constexpr int kHalves4[] = {0, 2};

// The 8-slot, 7-compute-slice family. Rows: name, compute slices, slots, memory, max count, starts, +me.
constexpr MigProfile kA100_40[] = {
    {"1g.5gb", 1, 1, 5 * kGiB, 7, kEvery7, false},    {"1g.5gb+me", 1, 1, 5 * kGiB, 1, kEvery7, true},
    {"1g.10gb", 1, 2, 10 * kGiB, 4, kEven4, false},   {"2g.10gb", 2, 2, 10 * kGiB, 3, kEven3, false},
    {"3g.20gb", 3, 4, 20 * kGiB, 2, kHalves8, false}, {"4g.20gb", 4, 4, 20 * kGiB, 1, kFirst, false},
    {"7g.40gb", 7, 8, 40 * kGiB, 1, kFirst, false},
};
constexpr MigProfile kA100_80[] = {
    {"1g.10gb", 1, 1, 10 * kGiB, 7, kEvery7, false},  {"1g.10gb+me", 1, 1, 10 * kGiB, 1, kEvery7, true},
    {"1g.20gb", 1, 2, 20 * kGiB, 4, kEven4, false},   {"2g.20gb", 2, 2, 20 * kGiB, 3, kEven3, false},
    {"3g.40gb", 3, 4, 40 * kGiB, 2, kHalves8, false}, {"4g.40gb", 4, 4, 40 * kGiB, 1, kFirst, false},
    {"7g.80gb", 7, 8, 80 * kGiB, 1, kFirst, false},
};
constexpr MigProfile kH100_94[] = {
    {"1g.12gb", 1, 1, 12 * kGiB, 7, kEvery7, false},  {"1g.12gb+me", 1, 1, 12 * kGiB, 1, kEvery7, true},
    {"1g.24gb", 1, 2, 24 * kGiB, 4, kEven4, false},   {"2g.24gb", 2, 2, 24 * kGiB, 3, kEven3, false},
    {"3g.47gb", 3, 4, 47 * kGiB, 2, kHalves8, false}, {"4g.47gb", 4, 4, 47 * kGiB, 1, kFirst, false},
    {"7g.94gb", 7, 8, 94 * kGiB, 1, kFirst, false},
};
constexpr MigProfile kH200[] = {
    {"1g.18gb", 1, 1, 18 * kGiB, 7, kEvery7, false},  {"1g.18gb+me", 1, 1, 18 * kGiB, 1, kEvery7, true},
    {"1g.35gb", 1, 2, 35 * kGiB, 4, kEven4, false},   {"2g.35gb", 2, 2, 35 * kGiB, 3, kEven3, false},
    {"3g.71gb", 3, 4, 71 * kGiB, 2, kHalves8, false}, {"4g.71gb", 4, 4, 71 * kGiB, 1, kFirst, false},
    {"7g.141gb", 7, 8, 141 * kGiB, 1, kFirst, false},
};
// The H100 96GB (on GH200) and the H20.
constexpr MigProfile kH100_96[] = {
    {"1g.12gb", 1, 1, 12 * kGiB, 7, kEvery7, false},  {"1g.12gb+me", 1, 1, 12 * kGiB, 1, kEvery7, true},
    {"1g.24gb", 1, 2, 24 * kGiB, 4, kEven4, false},   {"2g.24gb", 2, 2, 24 * kGiB, 3, kEven3, false},
    {"3g.48gb", 3, 4, 48 * kGiB, 2, kHalves8, false}, {"4g.48gb", 4, 4, 48 * kGiB, 1, kFirst, false},
    {"7g.96gb", 7, 8, 96 * kGiB, 1, kFirst, false},
};
constexpr MigProfile kB200[] = {
    {"1g.23gb", 1, 1, 23 * kGiB, 7, kEvery7, false},  {"1g.23gb+me", 1, 1, 23 * kGiB, 1, kEvery7, true},
    {"1g.45gb", 1, 2, 45 * kGiB, 4, kEven4, false},   {"2g.45gb", 2, 2, 45 * kGiB, 3, kEven3, false},
    {"3g.90gb", 3, 4, 90 * kGiB, 2, kHalves8, false}, {"4g.90gb", 4, 4, 90 * kGiB, 1, kFirst, false},
    {"7g.180gb", 7, 8, 180 * kGiB, 1, kFirst, false},
};
// The H200-class GPU of the GH200 NVL2 (144GB of HBM3e, "GH200 144G HBM3e"): GPU Operator 24.9.0's profile list;
// counts from mig-parted's `nvidia-smi mig -lgip` listing and default config.
constexpr MigProfile kGH200_144[] = {
    {"1g.18gb", 1, 1, 18 * kGiB, 7, kEvery7, false},  {"1g.18gb+me", 1, 1, 18 * kGiB, 1, kEvery7, true},
    {"1g.36gb", 1, 2, 36 * kGiB, 4, kEven4, false},   {"2g.36gb", 2, 2, 36 * kGiB, 3, kEven3, false},
    {"3g.72gb", 3, 4, 72 * kGiB, 2, kHalves8, false}, {"4g.72gb", 4, 4, 72 * kGiB, 1, kFirst, false},
    {"7g.144gb", 7, 8, 144 * kGiB, 1, kFirst, false},
};
// The GB200's Blackwell GPU (186GB in the user guide's "Supported GPUs"), as production boards name its profiles
// (mig-parted issue #227, GPU Operator's default config). GPU Operator 25.3.0 lists other names from early HGX GB200
// boards (1g.24gb, 1g.47gb, 2g.47gb, 3g.95gb, 4g.95gb, 7g.189gb); the table follows the user guide's 186GB.
constexpr MigProfile kGB200[] = {
    {"1g.23gb", 1, 1, 23 * kGiB, 7, kEvery7, false},  {"1g.23gb+me", 1, 1, 23 * kGiB, 1, kEvery7, true},
    {"1g.47gb", 1, 2, 47 * kGiB, 4, kEven4, false},   {"2g.47gb", 2, 2, 47 * kGiB, 3, kEven3, false},
    {"3g.93gb", 3, 4, 93 * kGiB, 2, kHalves8, false}, {"4g.93gb", 4, 4, 93 * kGiB, 1, kFirst, false},
    {"7g.186gb", 7, 8, 186 * kGiB, 1, kFirst, false},
};
// The B300 (Blackwell Ultra, 288GB of HBM3e; the whole-GPU profile is 7g.269gb): GPU Operator 25.10.0's profiles.
constexpr MigProfile kB300[] = {
    {"1g.34gb", 1, 1, 34 * kGiB, 7, kEvery7, false},    {"1g.34gb+me", 1, 1, 34 * kGiB, 1, kEvery7, true},
    {"1g.67gb", 1, 2, 67 * kGiB, 4, kEven4, false},     {"2g.67gb", 2, 2, 67 * kGiB, 3, kEven3, false},
    {"3g.135gb", 3, 4, 135 * kGiB, 2, kHalves8, false}, {"4g.135gb", 4, 4, 135 * kGiB, 1, kFirst, false},
    {"7g.269gb", 7, 8, 269 * kGiB, 1, kFirst, false},
};
// The A30: 4 slots, 4 compute slices.
constexpr MigProfile kA30[] = {
    {"1g.6gb", 1, 1, 6 * kGiB, 4, kEvery4, false},    {"1g.6gb+me", 1, 1, 6 * kGiB, 1, kEvery4, true},
    {"2g.12gb", 2, 2, 12 * kGiB, 2, kHalves4, false}, {"2g.12gb+me", 2, 2, 12 * kGiB, 1, kHalves4, true},
    {"4g.24gb", 4, 4, 24 * kGiB, 1, kFirst, false},
};

// The H100 80GB offers the same profiles and placements as the A100 80GB. The GH200 144GB, GB200 and B300 have the
// profile ids and instance counts of the H100 / H200 / B200 family and no `-lgipp` listing of theirs was found: their
// start slots are that family's.
constexpr std::array<MigModel, 11> kModels = {{
    {"A30-24GB", 4, 4, 24 * kGiB, kA30},
    {"A100-SXM4-40GB", 7, 8, 40 * kGiB, kA100_40},
    {"A100-80GB", 7, 8, 80 * kGiB, kA100_80},
    {"H100-80GB", 7, 8, 80 * kGiB, kA100_80},
    {"H100-94GB", 7, 8, 94 * kGiB, kH100_94},
    {"H100-96GB", 7, 8, 96 * kGiB, kH100_96},
    {"H200-141GB", 7, 8, 141 * kGiB, kH200},
    {"GH200-144GB", 7, 8, 144 * kGiB, kGH200_144},
    {"B200-180GB", 7, 8, 180 * kGiB, kB200},
    {"GB200-186GB", 7, 8, 186 * kGiB, kGB200},
    {"B300-269GB", 7, 8, 269 * kGiB, kB300},
}};

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// True when `token` occurs in `text` as a model name: not preceded by a letter or digit (so "GH200" is not
// "H200") and not followed by a digit (so "A3000" is not "A30").
bool HasToken(std::string_view text, std::string_view token) {
  for (size_t at = text.find(token); at != std::string_view::npos; at = text.find(token, at + 1)) {
    const size_t end = at + token.size();
    if ((at == 0 || !IsAlnum(text[at - 1])) && (end == text.size() || !IsDigit(text[end]))) return true;
  }
  return false;
}

// "1g.10gb" or "1g.10gb+me": digits, "g.", digits, "gb", an optional "+me".
bool WellFormedProfileName(std::string_view name) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < name.size() && IsDigit(name[i])) ++i;
    return i > from && i - from <= 3;
  };
  if (!digits() || name.substr(i, 2) != "g.") return false;
  i += 2;
  if (!digits() || name.substr(i, 2) != "gb") return false;
  i += 2;
  return i == name.size() || name.substr(i) == "+me";
}

// Every profile name of every model, once, smallest first: by compute slices, then memory, then name.
std::vector<std::string_view> AllProfileNames() {
  std::vector<std::tuple<int, int64_t, std::string_view>> rows;
  for (const MigModel& m : kModels) {
    for (const MigProfile& p : m.profiles) rows.emplace_back(p.compute_slices, p.memory_mib, p.name);
  }
  std::sort(rows.begin(), rows.end());
  std::vector<std::string_view> names;
  for (const auto& row : rows) {
    if (names.empty() || names.back() != std::get<2>(row)) names.push_back(std::get<2>(row));
  }
  return names;
}

}  // namespace

std::span<const MigModel> AllMigModels() { return kModels; }

const MigModel* MigModelNamed(std::string_view table_name) {
  for (const MigModel& m : kModels) {
    if (m.name == table_name) return &m;
  }
  return nullptr;
}

const MigModel* FindMigModel(std::string_view device_name, int64_t memory_mib) {
  std::string upper(device_name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string_view u = upper;
  const bool says80 = u.find("80GB") != std::string_view::npos;
  const bool says40 = u.find("40GB") != std::string_view::npos;
  if (HasToken(u, "A30")) return MigModelNamed("A30-24GB");
  if (HasToken(u, "A100") || HasToken(u, "A800")) {
    if (says80 || (!says40 && memory_mib > 60 * kGiB)) return MigModelNamed("A100-80GB");
    if (says40 || memory_mib > 0) return MigModelNamed("A100-SXM4-40GB");
    return nullptr;  // neither the name nor the caller says which
  }
  if (HasToken(u, "H100") || HasToken(u, "H800")) {
    const bool nvl = u.find("NVL") != std::string_view::npos || u.find("94GB") != std::string_view::npos;
    if (u.find("96GB") != std::string_view::npos) return MigModelNamed("H100-96GB");  // the H100 on GH200
    if (nvl || (!says80 && memory_mib > 88 * kGiB)) return MigModelNamed("H100-94GB");
    return MigModelNamed("H100-80GB");
  }
  if (HasToken(u, "H200")) return MigModelNamed("H200-141GB");
  // The Grace Hopper superchip is named for its whole memory ("GH200 480GB": an H100 with 96GB of HBM3); its
  // H200-class variant names its own ("GH200 144G HBM3e").
  if (HasToken(u, "GH200")) {
    const bool hbm3e = u.find("144G") != std::string_view::npos || memory_mib > 100 * kGiB;
    return MigModelNamed(hbm3e ? "GH200-144GB" : "H100-96GB");
  }
  // The H20 with 141GB of HBM3e ("H20-3e") has no table: no source found lists its profiles.
  if (HasToken(u, "H20")) {
    const bool hbm3e = u.find("H20-3E") != std::string_view::npos || u.find("141G") != std::string_view::npos ||
                       memory_mib > 100 * kGiB;
    return hbm3e ? nullptr : MigModelNamed("H100-96GB");
  }
  // "GB200" and "GB300" are not "B200" and "B300" to HasToken (a letter before); the GB300 has no table.
  if (HasToken(u, "GB200")) return MigModelNamed("GB200-186GB");
  if (HasToken(u, "B200")) return MigModelNamed("B200-180GB");
  if (HasToken(u, "B300")) return MigModelNamed("B300-269GB");
  return nullptr;
}

const MigProfile* FindMigProfile(const MigModel& model, std::string_view profile_name) {
  const int i = MigProfileIndex(model, profile_name);
  return i < 0 ? nullptr : &model.profiles[static_cast<size_t>(i)];
}

int MigProfileIndex(const MigModel& model, std::string_view profile_name) {
  for (size_t i = 0; i < model.profiles.size(); ++i) {
    if (model.profiles[i].name == profile_name) return static_cast<int>(i);
  }
  return -1;
}

int64_t MigComputeMilli(const MigModel& model, const MigProfile& profile) {
  return int64_t{1000} * profile.compute_slices / model.compute_slices;
}

std::string KnownMigProfileNames() {
  std::string out;
  for (std::string_view name : AllProfileNames()) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

Status ValidateMigProfileName(std::string_view profile_name) {
  const std::vector<std::string_view> names = AllProfileNames();
  if (std::find(names.begin(), names.end(), profile_name) != names.end()) return Status::Ok();
  std::string shown(profile_name.substr(0, 32));
  for (char& c : shown) {
    if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
  }
  return InvalidArgumentError("unknown MIG profile '" + shown + "' (known: " + KnownMigProfileNames() + ")");
}

Result<std::string> MigProfileFromResourceName(std::string_view resource_name) {
  constexpr std::string_view kPrefix = "nvidia.com/mig-";
  if (!resource_name.starts_with(kPrefix)) {
    return InvalidArgumentError("not a MIG resource (nvidia.com/mig-<profile>): '" +
                                std::string(resource_name.substr(0, 64)) + "'");
  }
  std::string profile(resource_name.substr(kPrefix.size()));
  if (profile.ends_with(".me")) profile.replace(profile.size() - 3, 1, "+");
  if (!WellFormedProfileName(profile)) {
    return InvalidArgumentError("'" + std::string(resource_name.substr(0, 64)) +
                                "' does not name a MIG profile like nvidia.com/mig-1g.10gb");
  }
  RETURN_IF_ERROR(ValidateMigProfileName(profile));
  return profile;
}

std::string MigResourceName(std::string_view profile_name) {
  std::string out = "nvidia.com/mig-" + std::string(profile_name);
  std::replace(out.begin(), out.end(), '+', '.');
  return out;
}

std::vector<int> MigStartSlots(const MigModel& model) {
  std::vector<int> slots;
  for (const MigProfile& p : model.profiles) slots.insert(slots.end(), p.starts.begin(), p.starts.end());
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

const MigProfile* SmallestCoveringMigProfile(const MigModel& model, int64_t memory_mib, int64_t compute_milli) {
  const MigProfile* best = nullptr;
  for (const MigProfile& p : model.profiles) {
    if (p.media_extensions || p.memory_mib < memory_mib) continue;
    // compute_slices / model.compute_slices >= compute_milli / 1000, in integers.
    if (int64_t{1000} * p.compute_slices < compute_milli * model.compute_slices) continue;
    if (best == nullptr || std::tie(p.memory_slices, p.compute_slices, p.memory_mib) <
                               std::tie(best->memory_slices, best->compute_slices, best->memory_mib)) {
      best = &p;
    }
  }
  return best;
}

const MigProfile* MigProfileForRequest(const MigModel& model, int64_t memory_mib, int64_t compute_milli) {
  constexpr int64_t kUsablePercent = 95;
  return SmallestCoveringMigProfile(model, (memory_mib * 100 + kUsablePercent - 1) / kUsablePercent, compute_milli);
}

Status ValidateMigGeometry(const MigModel& model, std::span<const MigPlacement> geometry) {
  std::array<bool, 16> used{};
  if (model.slots > static_cast<int>(used.size())) return InternalError(std::string(model.name) + ": too many slots");
  int compute = 0;
  for (size_t i = 0; i < geometry.size(); ++i) {
    const MigPlacement& g = geometry[i];
    const std::string at = "instance " + std::to_string(i);
    if (g.profile < 0 || g.profile >= static_cast<int>(model.profiles.size())) {
      return InvalidArgumentError(at + ": no profile " + std::to_string(g.profile) + " on " + std::string(model.name));
    }
    const MigProfile& p = model.profiles[static_cast<size_t>(g.profile)];
    if (std::find(p.starts.begin(), p.starts.end(), g.start) == p.starts.end()) {
      return InvalidArgumentError(at + ": " + std::string(p.name) + " cannot start at slot " + std::to_string(g.start));
    }
    if (g.start + p.memory_slices > model.slots) {
      return InvalidArgumentError(at + ": " + std::string(p.name) + " runs past the last slot");
    }
    for (int s = g.start; s < g.start + p.memory_slices; ++s) {
      if (used[static_cast<size_t>(s)]) {
        return InvalidArgumentError(at + ": slot " + std::to_string(s) + " is already taken");
      }
      used[static_cast<size_t>(s)] = true;
    }
    const auto same =
        std::count_if(geometry.begin(), geometry.end(), [&](const MigPlacement& o) { return o.profile == g.profile; });
    if (same > p.max_count) {
      return InvalidArgumentError(at + ": more than " + std::to_string(p.max_count) + " " + std::string(p.name));
    }
    compute += p.compute_slices;
  }
  if (compute > model.compute_slices) {
    return InvalidArgumentError(std::to_string(compute) + " compute slices on a GPU of " +
                                std::to_string(model.compute_slices));
  }
  return Status::Ok();
}

bool MigPlacementFits(const MigModel& model, std::span<const MigPlacement> geometry, int profile, int start) {
  if (profile < 0 || profile >= static_cast<int>(model.profiles.size())) return false;
  const MigProfile& p = model.profiles[static_cast<size_t>(profile)];
  if (std::find(p.starts.begin(), p.starts.end(), start) == p.starts.end()) return false;
  if (start + p.memory_slices > model.slots) return false;
  int same = 0, compute = p.compute_slices;
  for (const MigPlacement& g : geometry) {
    const MigProfile& q = model.profiles[static_cast<size_t>(g.profile)];
    if (start < g.start + q.memory_slices && g.start < start + p.memory_slices) return false;
    if (g.profile == profile) ++same;
    compute += q.compute_slices;
  }
  return same < p.max_count && compute <= model.compute_slices;
}

std::string_view MigProfileOfDevice(const Device& device) {
  if (device.mode != DeviceMode::kMig) return {};
  const std::string_view model = device.model;
  const size_t at = model.rfind(" MIG ");
  return at == std::string_view::npos ? std::string_view() : model.substr(at + 5);
}

}  // namespace xpool
