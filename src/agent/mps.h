#pragma once
// MpsDaemons: CUDA MPS (Multi-Process Service) for the devices of a node in MPS mode (DeviceMode::kMps): one MPS
// control daemon per device, run by the agent.
//
// For each device in MPS mode Start() runs `nvidia-cuda-mps-control -d` with CUDA_VISIBLE_DEVICES=<index> (and
// CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA numbers devices as NVML does), CUDA_MPS_PIPE_DIRECTORY=<dir>/<index>/pipe
// and CUDA_MPS_LOG_DIRECTORY=<dir>/<index>/log (directories mode 0755: tasks running as other users connect
// through the pipe directory). A daemon already answering on that pipe directory (one an earlier agent left,
// still serving its tasks) is taken over instead. Stop() — also the destructor — sends `quit` to each daemon this
// object holds: the daemon takes no new clients and exits once its clients have ended, so tasks that outlive the
// agent keep their MPS server until they end.
//
// Refusal: without the control program (looked up on PATH, or the configured path) or when a device's daemon does
// not start, those devices leave MPS mode (back to kShared, so the scheduler never counts on MPS there) and the
// node's label kMpsLabel says why; the reasons are also returned for the agent to print. The label lists the
// devices that run MPS otherwise.
//
// Tasks (task_env.h): a task given a device whose daemon runs gets CUDA_MPS_PIPE_DIRECTORY,
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (its cores request in percent, when below 100) and
// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("<visible index>=<MiB>M" per MPS device with a memory grant). A CUDA process
// talks to one MPS control daemon, so a task with several MPS devices connects to its first one's.
//
// Owned by the agent's main flow; not thread-safe.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/device.h"

namespace xpool::agent {

// The node label that says which devices run MPS, or why MPS mode was refused.
inline constexpr char kMpsLabel[] = "xpool.io/mps";

struct MpsOptions {
  std::string control_program = "nvidia-cuda-mps-control";  // a path, or a name searched on PATH
  std::string dir;                                          // per device <dir>/<index>/{pipe,log}; required
  int64_t timeout_ms = 10000;                               // for each run of the control program
};

// Puts devices of `node` in MPS mode: "all" (every NVIDIA device) or a list of indexes "0,2". InvalidArgument for
// an index the node does not have, a non-NVIDIA device or a malformed list, naming the flag's text; the node is
// left as it was then.
Status SetMpsMode(std::string_view devices, Node* node);

class MpsDaemons {
 public:
  explicit MpsDaemons(MpsOptions options);
  ~MpsDaemons();
  MpsDaemons(const MpsDaemons&) = delete;
  MpsDaemons& operator=(const MpsDaemons&) = delete;

  // Starts (or takes over) a daemon per device of `node` in MPS mode; refused devices go back to kShared. Sets
  // the node's kMpsLabel when some device was in MPS mode. Returns lines for people (what runs, what was refused).
  std::vector<std::string> Start(Node* node);
  // Quits every daemon held (graceful: each ends once its clients have). Errors are returned as lines.
  std::vector<std::string> Stop();
  // Device index → the pipe directory of its daemon, for the devices whose daemon runs.
  const std::map<int, std::string>& pipe_dirs() const { return pipe_dirs_; }

 private:
  // The control program's environment for device `index`.
  std::map<std::string, std::string> DaemonEnv(int index) const;
  // Starts or takes over device `index`'s daemon; the reason when it cannot.
  Status StartOne(const std::string& program, int index);

  MpsOptions options_;
  std::string program_;                   // resolved control program; empty until Start found it
  std::map<int, std::string> pipe_dirs_;  // the daemons held
};

}  // namespace xpool::agent
