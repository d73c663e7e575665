// ringtrain forward: one pass of a named model on weights and a batch read from safetensors files,
// for interoperability (a torchvision state_dict loads as is) and debugging; the PyTorch parity
// tests drive it. The batch file holds "input" (N, C, H, W) and, for the loss, "target" (N) of
// class indices. The output file holds "logits", "aux_logits" where the model has an auxiliary
// head, "loss" (F64, the total training loss: main + 0.4 x aux), "grad.<parameter>" for every
// parameter after --backward, and every buffer and counter after the pass.
#pragma once

#include <string>

#include "config/config.h"

namespace rt {

struct ForwardRequest {
  Config config;  // model.*, train.seed (dropout) and train.threads are used
  std::string weights_path, batch_path, out_path;
  bool training = true;   // batch statistics in batch norm (and their running averages updated)
  bool backward = false;  // also every parameter gradient of the loss
};

// Runs the pass and writes out_path (atomically); returns a one-line summary.
std::string run_forward(const ForwardRequest& request);

}  // namespace rt
