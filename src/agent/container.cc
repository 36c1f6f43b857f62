#include "agent/container.h"

#include "model/vendor.h"

namespace xpool::agent {

ContainerCommand PodmanArgv(const std::string& podman, const LaunchSpec& spec,
                            const std::map<std::string, std::string>& env, const std::string& task_dir,
                            const std::string& vgpu_library, const std::map<int, std::string>& visible_names) {
  ContainerCommand out;
  std::vector<std::string>& a = out.argv;
  a = {podman, "run", "--rm", "--name", "xpool-" + spec.task_id, "--network", "host", "--ipc", "host"};
  a.insert(a.end(), {"--volume", spec.workdir + ":" + spec.workdir, "--workdir", spec.workdir});
  a.insert(a.end(), {"--volume", task_dir + ":" + task_dir});
  const auto preload = env.find("LD_PRELOAD");
  if (!vgpu_library.empty() && preload != env.end() && preload->second.find(vgpu_library) != std::string::npos) {
    a.insert(a.end(), {"--volume", vgpu_library + ":" + vgpu_library + ":ro"});
  }
  // Inside the container the task's devices are its only ones: numbered 0..n-1.
  std::string renumbered;
  for (size_t i = 0; i < spec.devices.size(); ++i) renumbered += (i ? "," : "") + std::to_string(i);
  const std::string visible(ProfileFor(spec.vendor).visible_devices_env);
  if (!spec.devices.empty()) {
    if (spec.vendor == Vendor::kNvidia) {
      for (const TaskDevice& d : spec.devices) {
        const auto uuid = visible_names.find(d.index);
        a.insert(a.end(), {"--device",
                           "nvidia.com/gpu=" + (uuid != visible_names.end() ? uuid->second : std::to_string(d.index))});
      }
    } else {
      out.notes.push_back("image: " + std::string(VendorName(spec.vendor)) +
                          " devices are not passed into containers; the task sees none");
    }
  }
  for (const auto& [name, value] : env) {
    if (name == "PATH" || name == "HOME" || name == "HOSTNAME") continue;  // the image's own
    if (!spec.devices.empty() && spec.vendor == Vendor::kNvidia &&
        (name == visible || name == "NVIDIA_VISIBLE_DEVICES")) {
      a.insert(a.end(), {"--env", name + "=" + renumbered});
      continue;
    }
    a.insert(a.end(), {"--env", name});
  }
  a.push_back(spec.image);
  a.insert(a.end(), spec.argv.begin(), spec.argv.end());
  return out;
}

std::string NoPodmanReason(const LaunchSpec& spec, const std::string& path_list) {
  return "image " + spec.image + ": podman is not installed on this node (not in PATH=" + path_list +
         "), so this job can never run here; install podman (Debian: apt-get install podman) or drop image:";
}

}  // namespace xpool::agent
