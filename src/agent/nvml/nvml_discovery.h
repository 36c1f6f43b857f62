#pragma once
// NvmlDiscovery: NVIDIA devices through NVML, loaded with dlopen at run time so the agent builds
// and runs on machines without a driver. No library → available = false with a note ("no NVML
// found: ..."), not an error.
//
// A GPU in MIG mode is offered as its MIG instances (mig_layout.h ExpandMigDevices): one device per instance, with
// its MIG uuid, memory and compute share, mode kMig; with set_mig_slots (--mig-dynamic), one device per start slot,
// free slots in mode kMigSlot, and the node labelled kMigDynamicLabel with the GPUs' geometries.
//
// Per device: uuid, name, total memory, NUMA node (nvmlDeviceGetNumaNodeId, else the PCI device's
// sysfs numa_node; -1 or unknown → 0), health (a device NVML reports lost or cannot query is
// unhealthy). Per pair: NVLink lanes between them (kLinkNvlinkPerLane each), else the PCIe common
// ancestor as a score (discovery.h). The library is opened and closed within each Discover(). Owned
// by the agent; not thread-safe.
#include <string>

#include "agent/discovery.h"

namespace xpool::agent {

class NvmlDiscovery final : public DeviceDiscovery {
 public:
  // `library`: a file name searched the usual dlopen way or a path. `pci_sysfs`: where PCI devices
  // live (tests point it elsewhere). `node_name` empty = the host name.
  explicit NvmlDiscovery(std::string library = "libnvidia-ml.so.1", std::string pci_sysfs = "/sys/bus/pci/devices",
                         std::string node_name = "");
  std::string_view name() const override { return "nvml"; }
  Result<DiscoveryReport> Discover() override;
  void set_mig_slots(bool on) { mig_slots_ = on; }

 private:
  // Replaces the GPUs in MIG mode by their instances and says so in the note.
  void ExpandMig(DiscoveryReport* report) const;

  std::string library_;
  std::string pci_sysfs_;
  std::string node_name_;
  bool mig_slots_ = false;
};

}  // namespace xpool::agent
