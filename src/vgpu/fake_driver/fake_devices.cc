#include "vgpu/fake_driver/fake_devices.h"

#include <stdio.h>
#include <stdlib.h>

#include "vgpu/vgpu_env.h"

namespace xpool::vgpu::fake {

const FakeDevices& Devices() {
  static const FakeDevices devices = [] {
    FakeDevices d;
    const char* spec = getenv(XPOOL_ENV_FAKE_DEVICES);
    unsigned count = 0;
    unsigned long long mib = 0;
    char tail = 0;
    if (spec != nullptr && sscanf(spec, "%ux%llu%c", &count, &mib, &tail) == 2 && count >= 1 &&
        count <= kMaxFakeDevices && mib >= 1 && mib < (1ull << 30)) {
      d.count = static_cast<int>(count);
      d.bytes = mib << 20;
    } else if (spec != nullptr) {
      fprintf(stderr, "[fake-driver] %s='%s' is not '<count>x<MiB>'; using 1x16384\n", XPOOL_ENV_FAKE_DEVICES, spec);
    }
    return d;
  }();
  return devices;
}

}  // namespace xpool::vgpu::fake
