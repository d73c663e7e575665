// Note [Rank state]: what differs between ranks and must survive a resume, so far PowerSGD's
// errors and carried Q's (Note [PowerSGD buckets] in dist/powersgd_buckets.h), lies beside each
// checkpoint in one file per rank, checkpoint-<N>.rank<R>-of-<P>.safetensors. Every rank writes its
// own before rank 0 writes the checkpoint, so a published checkpoint has all of them, and
// publish_checkpoint removes them with it. A resume loads them only where every rank finds its
// own at the same rank count (the Q's must be the same on every rank); otherwise every rank starts
// afresh and rank 0 says why.
#pragma once

#include <string>
#include <vector>

#include "dist/powersgd_buckets.h"
#include "formats/safetensors.h"

namespace rt {

// checkpoint-<N>.safetensors -> checkpoint-<N>.rank<rank>-of-<ranks>.safetensors, beside it.
std::string rank_state_path(const std::string& checkpoint, int rank, int ranks);

// "powersgd.error.<name>" and "powersgd.q.<name>" of each compressed tensor, `names` the
// parameters' in arena order.
StFile powersgd_state(PowerSgdBuckets& compression, const std::vector<std::string>& names);
// Reads them back from `file` (called `source` in messages), each checked for its shape (Q as k x m: its columns).
void load_powersgd_state(PowerSgdBuckets& compression, const std::vector<std::string>& names, const StFile& file,
                         const std::string& source);

}  // namespace rt
