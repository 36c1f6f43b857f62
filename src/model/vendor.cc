#include "model/vendor.h"

#include <array>
#include <cctype>
#include <string>

namespace xpool {
namespace {

// Resource names follow the ones HAMi's chart uses for each vendor, so pods written for HAMi work unchanged.
constexpr std::array<VendorProfile, 6> kProfiles = {{
    {Vendor::kNvidia, "nvidia", "nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpumem-percentage",
     "nvidia.com/gpucores", "nvidia.com/use-gputype", "nvidia.com/nouse-gputype", "nvidia.com/use-gpuuuid",
     "nvidia.com/nouse-gpuuuid", "CUDA_VISIBLE_DEVICES", 10, 1, 1, true},
    // Ascend NPUs are split by vNPU templates: memory is granted in template-sized steps; no core limit.
    {Vendor::kAscend, "ascend", "huawei.com/Ascend910B", "huawei.com/Ascend910B-memory", "", "",
     "huawei.com/use-ascendtype", "huawei.com/nouse-ascendtype", "huawei.com/use-ascenduuid",
     "huawei.com/nouse-ascenduuid", "ASCEND_VISIBLE_DEVICES", 4, 1, 4096, false},
    {Vendor::kCambricon, "cambricon", "cambricon.com/vmlu", "cambricon.com/mlu.smlu.vmemory", "",
     "cambricon.com/mlu.smlu.vcore", "cambricon.com/use-mlutype", "cambricon.com/nouse-mlutype",
     "cambricon.com/use-mluuuid", "cambricon.com/nouse-mluuuid", "MLU_VISIBLE_DEVICES", 10, 1, 1, true},
    {Vendor::kHygon, "hygon", "hygon.com/dcunum", "hygon.com/dcumem", "", "hygon.com/dcucores", "hygon.com/use-dcutype",
     "hygon.com/nouse-dcutype", "hygon.com/use-gpuuuid", "hygon.com/nouse-gpuuuid", "HIP_VISIBLE_DEVICES", 4, 1, 1,
     true},
    // Iluvatar counts device memory in 256 MiB units.
    {Vendor::kIluvatar, "iluvatar", "iluvatar.ai/vgpu", "iluvatar.ai/vcuda-memory", "", "iluvatar.ai/vcuda-core",
     "iluvatar.ai/use-gputype", "iluvatar.ai/nouse-gputype", "iluvatar.ai/use-gpuuuid", "iluvatar.ai/nouse-gpuuuid",
     "CUDA_VISIBLE_DEVICES", 10, 256, 256, true},
    {Vendor::kMetax, "metax", "metax-tech.com/sgpu", "metax-tech.com/vmemory", "", "metax-tech.com/vcore",
     "metax-tech.com/use-gputype", "metax-tech.com/nouse-gputype", "metax-tech.com/use-gpuuuid",
     "metax-tech.com/nouse-gpuuuid", "METAX_VISIBLE_DEVICES", 16, 1, 1, true},
}};

}  // namespace

std::span<const VendorProfile> AllVendorProfiles() { return kProfiles; }

const VendorProfile& ProfileFor(Vendor vendor) { return kProfiles[static_cast<size_t>(vendor)]; }

std::string_view VendorName(Vendor vendor) { return ProfileFor(vendor).name; }

Result<Vendor> ParseVendor(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const VendorProfile& p : kProfiles) {
    if (p.name == lower) return p.vendor;
  }
  std::string known;
  for (const VendorProfile& p : kProfiles) {
    if (!known.empty()) known += ", ";
    known += p.name;
  }
  return InvalidArgumentError("unknown vendor \"" + std::string(name) + "\" (known: " + known + ")");
}

}  // namespace xpool
