// Command-line parsing: `ringtrain [train|eval|bench|forward|predict|pack|info|ring-demo|simulate] --config FILE
// [--set table.key=value ...] [--resume DIR | --auto-resume]`. `train` when the subcommand is left out, so
// `mpirun ringtrain --config X` trains. Bad arguments are rt::Error with the usage hint.
#pragma once

#include <string>
#include <vector>

namespace rt {

struct CliArgs {
  std::string command =
      "train";  // train | eval | bench | forward | predict | pack | info | ring-demo | simulate | help | version
  std::string config_path;
  std::vector<std::string> overrides;
  std::string resume_dir;
  bool auto_resume = false;         // train --auto-resume: from checkpoint.dir where it has a checkpoint
  std::string model;                // info, forward: --model NAME
  int64_t input = 0;                // info --input SIZE (square); 0 = the model's usual size
  std::string weights, batch, out;  // forward --weights FILE --batch FILE --out FILE; predict --weights FILE
  std::vector<std::string> images;  // predict --image PATH ...
  bool backward = false;            // forward --backward
  bool eval_mode = false;           // forward --eval
  int ranks = 0;                    // ring-demo --ranks P
  int hosts = 0;                    // ring-demo --hosts H (0: the flat ring)
  int64_t elements = 0;             // ring-demo --elements N
  std::string rank_list;            // simulate --ranks 8,16,...
  std::string network;              // simulate --network FILE
  double cycle_ms = 0;              // simulate --cycle-ms C
  bool suggest = false;             // simulate --suggest
  bool autotune = false;            // simulate --autotune
  double straggler_pct = 0;         // simulate --straggler PCT
  std::string pack_from, pack_to;   // pack --from DIR --to OUT
  double shard_mb = 256;            // pack --shard-mb N
  std::string profile;              // bench --profile FILE (writes), simulate --profile FILE (reads)
};

CliArgs parse_cli(int argc, const char* const* argv);
std::string usage();

}  // namespace rt
