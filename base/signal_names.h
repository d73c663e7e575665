// The signals a run can be asked to stop on (checkpoint.signals), by name: the config checks the
// names, app/run/stop_signals.h watches the signals.
#pragma once

#include <string>
#include <vector>

namespace rt {

// "SIGTERM,SIGUSR1" as signal numbers; "" is none. Throws rt::Error naming the unknown name.
std::vector<int> parse_signal_list(const std::string& text);  // each signal once
// Every signal checkpoint.signals may name, in a fixed order (the same on every rank).
const std::vector<int>& watchable_signals();
std::string signal_name(int signal);

}  // namespace rt
