#include "model/mig_label.h"

#include <algorithm>

#include "common/text.h"

namespace xpool {

std::string FormatMigDynamicLabel(std::span<const MigGpuGeometry> gpus) {
  std::string text;
  for (const MigGpuGeometry& g : gpus) {
    if (!text.empty()) text += ';';
    text += std::to_string(g.gpu) + "=" + std::string(g.model->name) + ":";
    for (size_t i = 0; i < g.instances.size(); ++i) {
      if (i > 0) text += ',';
      text += std::string(g.model->profiles[g.instances[i].profile].name) + "@" + std::to_string(g.instances[i].start);
    }
  }
  return text;
}

Result<std::vector<MigGpuGeometry>> ParseMigDynamicLabel(std::string_view text) {
  std::vector<MigGpuGeometry> gpus;
  if (text.empty()) return gpus;
  for (std::string_view part : SplitText(text, ';')) {
    const size_t eq = part.find('='), colon = part.find(':');
    MigGpuGeometry g;
    if (eq == std::string_view::npos || colon == std::string_view::npos || colon < eq ||
        !ParseWholeInt(part.substr(0, eq), &g.gpu) || g.gpu < 0) {
      return InvalidArgumentError("\"" + std::string(part) + "\": expected GPU=TABLE:PROFILE@START,...");
    }
    g.model = MigModelNamed(part.substr(eq + 1, colon - eq - 1));
    if (g.model == nullptr) {
      return InvalidArgumentError("\"" + std::string(part) + "\": no MIG table named \"" +
                                  std::string(part.substr(eq + 1, colon - eq - 1)) + "\"");
    }
    const std::string_view list = part.substr(colon + 1);
    for (std::string_view item : list.empty() ? std::vector<std::string_view>{} : SplitText(list, ',')) {
      const size_t at = item.find('@');
      MigPlacement p;
      p.profile = at == std::string_view::npos ? -1 : MigProfileIndex(*g.model, item.substr(0, at));
      if (p.profile < 0 || !ParseWholeInt(item.substr(at + 1), &p.start)) {
        return InvalidArgumentError("\"" + std::string(item) + "\": expected a " + std::string(g.model->name) +
                                    " profile and its start, e.g. 1g.10gb@3");
      }
      g.instances.push_back(p);
    }
    RETURN_IF_ERROR(ValidateMigGeometry(*g.model, g.instances).WithContext("GPU " + std::to_string(g.gpu)));
    if (std::any_of(gpus.begin(), gpus.end(), [&](const MigGpuGeometry& o) { return o.gpu == g.gpu; })) {
      return InvalidArgumentError("GPU " + std::to_string(g.gpu) + " is named twice");
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::string FormatMigGeometryText(std::span<const MigGpuGeometry> gpus) {
  std::string text;
  for (const MigGpuGeometry& g : gpus) {
    if (g.instances.empty()) continue;
    if (!text.empty()) text += ';';
    text += std::to_string(g.gpu) + "=";
    for (size_t i = 0; i < g.instances.size(); ++i) {
      if (i > 0) text += ',';
      text += g.model->profiles[g.instances[i].profile].name;
    }
  }
  return text;
}

}  // namespace xpool
