#pragma once
// Parsers for the device listings of the non-NVIDIA vendors' management tools, each the tool's standard text
// output as its vendor documents it:
//
//   vendor     tool and arguments                                           what it prints
//   ascend     npu-smi info                                                 boxed table, 2 rows per chip
//   cambricon  cnmon                                                        boxed table, 2 rows per card
//   hygon      hy-smi --showproductname --showmeminfo vram --showbus        "DCU[0] : Card Series: ..." lines
//              --showuniqueid
//   iluvatar   ixsmi                                                        boxed table (nvidia-smi's), 2 rows per GPU
//   metax      mx-smi                                                       boxed table, 2 rows per GPU
//
// Each returns the devices in the order printed, with vendor, model (the vendor's own prefix, "Iluvatar " or
// "MetaX ", dropped as NVML's "NVIDIA " is), index (the number the vendor's visible-devices variable takes),
// memory in MiB (the tools' "MB" are MiB), max sharers from the vendor's profile, health, and a uuid: the tool's
// unique id when it prints one, else "<VENDOR>-<bus id>" (stable across reboots), else "<VENDOR>-<index>"; a uuid
// already taken gets "#2", "#3", ...
// A device the tool reports in a bad state, or whose memory it cannot read, is listed unhealthy (memory 0 when
// unreadable) and `notes` (when given) gets a line saying why. Output that is not the expected listing is
// InvalidArgument naming the tool and the line. Pure functions; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/device.h"

namespace xpool::agent {

// `npu-smi info`: per chip a row "NPU Name | Health | Power Temp Hugepages" and a row "Chip [Device] | Bus-Id |
// AICore Memory-Usage [HBM-Usage]". Memory is the HBM total when the table has one (910 series), else the
// Memory-Usage total (310 series). Index: the Device column when printed (cards with several chips), else the NPU
// id. Health "OK" and "Warning" count as healthy; anything else (Alarm, Critical, ...) does not.
Result<std::vector<Device>> ParseNpuSmiInfo(std::string_view text, std::vector<std::string>* notes = nullptr);

// `cnmon`: per card "Card VF Name Firmware | Bus-Id | Util Ecc-Error" and "Fan Temp Pwr | Memory-Usage | ...".
// Older versions print "Inited Driver" instead of the bus id. A virtual function (VF column not "/") gets its own
// uuid "<bus id>-vf<n>".
Result<std::vector<Device>> ParseCnmon(std::string_view text, std::vector<std::string>* notes = nullptr);

// `hy-smi --showproductname --showmeminfo vram --showbus --showuniqueid`: "DCU[i] : <field>: <value>" lines (HCU
// and GPU prefixes too); fields "Card Series" (or "Card series"), "vram Total Memory (MiB)" (or "(B)"), "PCI Bus"
// (its first word: newer versions append " --> SN: ..."), "Unique ID". Banner lines ("=== ... ===", "WARNING: ...") are
// skipped; any other line is an error.
Result<std::vector<Device>> ParseHySmi(std::string_view text, std::vector<std::string>* notes = nullptr);

// `ixsmi`: nvidia-smi's table, per GPU "GPU Name | Bus-Id | Clock-SM Clock-Mem" and "Fan Temp Perf Pwr |
// Memory-Usage | GPU-Util Compute M.". A cell reading "ERR!" marks the GPU unhealthy.
Result<std::vector<Device>> ParseIxsmi(std::string_view text, std::vector<std::string>* notes = nullptr);

// `mx-smi`: per GPU "GPU NAME [Persistence-M] | Bus-id | GPU-Util [sGPU-M]" and "Temp Pwr [Perf] | Memory-Usage |
// [GPU-State]". A GPU-State other than "Available" marks the GPU unhealthy. When the output says "Attached GPUs :
// N" the table must list N GPUs (a shorter table was cut short).
Result<std::vector<Device>> ParseMxSmi(std::string_view text, std::vector<std::string>* notes = nullptr);

}  // namespace xpool::agent
