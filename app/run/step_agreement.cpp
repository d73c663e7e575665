#include "app/run/step_agreement.h"

#include <iterator>
#include <vector>

#include "app/run/stop_signals.h"
#include "base/check.h"

namespace rt {

StepAgreement::StepAgreement(const CheckpointConfig& checkpoint, int64_t epochs, const World& world,
                             const StallPolicy* stall)
    : checkpoint_(checkpoint), epochs_(epochs), world_(world), stall_(stall) {}

AfterStep StepAgreement::after_step(int64_t step) const {
  const CheckpointConfig& c = checkpoint_;
  const int signal = StopSignals::received();
  const bool clock_due =
      world_.rank() == 0 && c.every_minutes > 0 &&
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_save_).count() >= c.every_minutes * 60;
  // flags[0]: rank 0's clock says save; then, per signal that can be watched, the ranks that got it.
  const std::vector<int>& watchable = watchable_signals();
  double flags[8] = {clock_due ? 1.0 : 0.0};
  RT_CHECK(watchable.size() < std::size(flags), "more watchable signals than flags");
  for (size_t i = 0; i < watchable.size(); ++i) flags[1 + i] = watchable[i] == signal ? 1.0 : 0.0;
  RT_CHECK(watchable.size() + 2 <= std::size(flags), "more watchable signals than flags");
  const int count = static_cast<int>(2 + watchable.size());
  flags[count - 1] = StopSignals::take_report_request() ? 1.0 : 0.0;  // SIGUSR2: the straggler report
  if (world_.size() > 1 && (!c.signals.empty() || c.every_minutes > 0 || StopSignals::reports()))
    world_.allreduce_sum(flags, count, {stall_, str_cat("step ", step, ": the save agreement after it")});
  AfterStep d;
  for (size_t i = 0; i < watchable.size(); ++i) {
    d.signalled_ranks += static_cast<int>(flags[1 + i]);
    if (flags[1 + i] > 0 && d.signal == 0) d.signal = watchable[i];
  }
  d.stop = d.signalled_ranks > 0;
  d.report = flags[count - 1] > 0;
  d.save = d.stop || flags[0] > 0 || (c.every_steps > 0 && step % c.every_steps == 0);
  return d;
}

bool StepAgreement::saves_after_epoch(int64_t epoch) const {
  return epoch % checkpoint_.every_epochs == 0 || epoch == epochs_;
}

}  // namespace rt
