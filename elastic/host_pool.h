// The hosts an elastic job may run on (`ringtrain elastic`), each with its slots, and which of them
// are left out after a failure: for --leave-out-s, or until the discovery script, having dropped
// the host, lists it again; for good after --host-failures failures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

struct HostSlots {
  std::string name;
  int slots = 1;
};

// One host per line, as "NAME", "NAME SLOTS", "NAME:SLOTS" or "NAME slots=SLOTS" (Horovod's
// discovery scripts print "NAME:SLOTS"; Open MPI's host files "NAME slots=SLOTS"); blank lines
// and '#' comments are skipped. Throws rt::Error naming `source` and the line otherwise.
std::vector<HostSlots> parse_host_list(const std::string& text, const std::string& source);

// Whether two names are one host: equal, or equal up to the first '.' (a host file may give
// "node01.cluster" where the host calls itself "node01").
bool same_host(const std::string& a, const std::string& b);

class HostPool {
 public:
  HostPool(double leave_out_s, int failures_for_good) : leave_out_s_(leave_out_s), for_good_(failures_for_good) {}

  // The hosts as listed now (the hosts file once, or each run of the discovery script); `now_s`
  // is the supervisor's clock. A left-out host the list dropped comes back when it is listed again.
  void listed(const std::vector<HostSlots>& hosts, double now_s);
  // The job failed on `host`: leave it out. Returns how many times it has failed.
  int failed(const std::string& host, double now_s);

  // The listed hosts not left out at now_s, in the listed order.
  std::vector<HostSlots> usable(double now_s) const;
  // "rt-b (failed 1 time; out for 512 s more)", one per left-out listed host.
  std::vector<std::string> left_out(double now_s) const;
  bool out_for_good(const std::string& host) const;

 private:
  struct Host {
    HostSlots slots;
    bool listed = false;
    int failures = 0;
    double out_until_s = 0;      // left out until then (0: not left out)
    bool dropped_since = false;  // the list dropped it after its last failure
  };
  Host* find(const std::string& name);
  const Host* find(const std::string& name) const;

  double leave_out_s_;
  int for_good_;
  std::vector<Host> hosts_;
};

// The first `ranks` slots of `hosts` in order: each host with the ranks it gets.
std::vector<HostSlots> place_ranks(const std::vector<HostSlots>& hosts, int ranks);
// "rt-a:2,rt-b:2": placed hosts as the launcher's --hosts.
std::string hosts_arg(const std::vector<HostSlots>& placed);

// How many ranks to launch on `slots` free slots: the most, at most max_np, that divides
// global_batch (0: any count); 0 where none reaches min_np.
int choose_ranks(int slots, int min_np, int max_np, int64_t global_batch);

}  // namespace rt
