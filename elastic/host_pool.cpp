#include "elastic/host_pool.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/check.h"

namespace rt {
namespace {

bool parse_slots(const std::string& text, int* slots) {
  if (text.empty() || text.size() > 6 || !std::all_of(text.begin(), text.end(), ::isdigit)) return false;
  *slots = std::stoi(text);
  return *slots >= 1;
}

}  // namespace

std::vector<HostSlots> parse_host_list(const std::string& text, const std::string& source) {
  std::vector<HostSlots> hosts;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    HostSlots h;
    bool ok = w.size() <= 2;
    if (ok && w.size() == 1) {
      const size_t colon = w[0].find(':');
      h.name = w[0].substr(0, colon);
      if (colon != std::string::npos) ok = parse_slots(w[0].substr(colon + 1), &h.slots);
    } else if (ok) {
      h.name = w[0];
      ok = parse_slots(w[1].rfind("slots=", 0) == 0 ? w[1].substr(6) : w[1], &h.slots);
    }
    ok = ok && !h.name.empty();
    RT_CHECK(ok, source, ":", number, ": '", line,
             "' is not a host: expected NAME, NAME SLOTS, NAME:SLOTS or NAME slots=SLOTS (slots at least 1)");
    for (const HostSlots& seen : hosts)
      RT_CHECK(!same_host(seen.name, h.name), source, ":", number, ": host '", h.name, "' is listed twice");
    hosts.push_back(h);
  }
  return hosts;
}

bool same_host(const std::string& a, const std::string& b) {
  if (a == b) return true;
  return a.substr(0, a.find('.')) == b.substr(0, b.find('.'));
}

HostPool::Host* HostPool::find(const std::string& name) {
  for (Host& h : hosts_)
    if (same_host(h.slots.name, name)) return &h;
  return nullptr;
}

const HostPool::Host* HostPool::find(const std::string& name) const { return const_cast<HostPool*>(this)->find(name); }

void HostPool::listed(const std::vector<HostSlots>& hosts, double now_s) {
  for (Host& h : hosts_) {
    const bool listed_now =
        std::any_of(hosts.begin(), hosts.end(), [&](const HostSlots& s) { return same_host(s.name, h.slots.name); });
    if (!listed_now && h.out_until_s > now_s) h.dropped_since = true;
    // Dropped after its failure and listed again: the discovery script says it is back.
    if (listed_now && h.dropped_since && h.failures < for_good_) h.out_until_s = 0, h.dropped_since = false;
    h.listed = listed_now;
  }
  std::vector<Host> ordered;
  for (const HostSlots& s : hosts) {
    Host* known = find(s.name);
    Host h = known ? *known : Host{};
    h.slots = s;
    h.listed = true;
    ordered.push_back(h);
  }
  for (const Host& h : hosts_)  // unlisted hosts keep their record, after the listed ones
    if (!h.listed) ordered.push_back(h);
  hosts_ = std::move(ordered);
}

int HostPool::failed(const std::string& host, double now_s) {
  Host* h = find(host);
  if (!h) {
    hosts_.push_back(Host{{host, 1}, false, 0, 0, false});
    h = &hosts_.back();
  }
  ++h->failures;
  h->out_until_s = now_s + leave_out_s_;
  h->dropped_since = false;
  return h->failures;
}

bool HostPool::out_for_good(const std::string& host) const {
  const Host* h = find(host);
  return h && h->failures >= for_good_;
}

std::vector<HostSlots> HostPool::usable(double now_s) const {
  std::vector<HostSlots> out;
  for (const Host& h : hosts_)
    if (h.listed && h.failures < for_good_ && h.out_until_s <= now_s) out.push_back(h.slots);
  return out;
}

std::vector<std::string> HostPool::left_out(double now_s) const {
  std::vector<std::string> out;
  for (const Host& h : hosts_) {
    if (!h.listed || (h.failures < for_good_ && h.out_until_s <= now_s)) continue;
    const std::string times = str_cat("failed ", h.failures, h.failures == 1 ? " time" : " times");
    out.push_back(h.failures >= for_good_
                      ? str_cat(h.slots.name, " (", times, ": out for good)")
                      : str_cat(h.slots.name, " (", times, "; out for ",
                                static_cast<int64_t>(std::ceil(h.out_until_s - now_s)), " s more)"));
  }
  return out;
}

std::vector<HostSlots> place_ranks(const std::vector<HostSlots>& hosts, int ranks) {
  std::vector<HostSlots> out;
  for (const HostSlots& h : hosts) {
    if (ranks <= 0) break;
    const int here = std::min(ranks, h.slots);
    out.push_back({h.name, here});
    ranks -= here;
  }
  return out;
}

std::string hosts_arg(const std::vector<HostSlots>& placed) {
  std::string out;
  for (const HostSlots& h : placed) out += str_cat(out.empty() ? "" : ",", h.name, ":", h.slots);
  return out;
}

int choose_ranks(int slots, int min_np, int max_np, int64_t global_batch) {
  for (int n = std::min(slots, max_np); n >= std::max(min_np, 1); --n)
    if (global_batch == 0 || global_batch % n == 0) return n;
  return 0;
}

}  // namespace rt
