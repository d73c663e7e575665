#include "formats/step_profile.h"

#include <fstream>
#include <sstream>

#include "base/check.h"
#include "formats/atomic_file.h"

namespace rt {

double StepProfile::step_s() const {
  double s = forward_s + optimizer_s;
  for (const auto& [name, seconds] : layers) s += seconds;
  return s;
}

void write_step_profile(const std::string& path, const StepProfile& p, const std::string& comment) {
  std::ostringstream out;
  out.precision(17);  // reads back to the same doubles
  out << "# " << comment << "\n"
      << "model " << p.model << "\nbatch_per_rank " << p.batch_per_rank << "\nforward_s " << p.forward_s
      << "\noptimizer_s " << p.optimizer_s << "\n";
  for (const auto& [name, seconds] : p.layers) out << "layer " << name << " " << seconds << "\n";
  write_file_atomically(path, out.str());
}

StepProfile read_step_profile(const std::string& path) {
  std::ifstream in(path);
  RT_CHECK(in.good(), "cannot read profile '", path, "'");
  StepProfile p;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string key, name;
    double value = 0;
    fields >> key;
    const std::string at = str_cat(path, ":", number, ": ");
    if (key == "model") {
      RT_CHECK(static_cast<bool>(fields >> p.model), at, "model needs a name");
    } else if (key == "batch_per_rank") {
      RT_CHECK(static_cast<bool>(fields >> p.batch_per_rank) && p.batch_per_rank > 0, at,
               "batch_per_rank needs a positive integer");
    } else if (key == "forward_s" || key == "optimizer_s") {
      RT_CHECK(static_cast<bool>(fields >> value) && value >= 0, at, key, " needs seconds (0 or more)");
      (key == "forward_s" ? p.forward_s : p.optimizer_s) = value;
    } else if (key == "layer") {
      RT_CHECK(static_cast<bool>(fields >> name >> value) && value >= 0, at, "expected 'layer NAME SECONDS'");
      p.layers.emplace_back(name, value);
    } else {
      RT_CHECK(false, at, "unknown key '", key, "' (expected model, batch_per_rank, forward_s, optimizer_s, layer)");
    }
  }
  RT_CHECK(!p.model.empty() && p.batch_per_rank > 0 && !p.layers.empty(), path,
           ": a profile needs model, batch_per_rank and layer lines (ringtrain bench --profile writes them)");
  return p;
}

}  // namespace rt
