// Representative selection: see representative_set.h for the rule. Groups are worked on as lists
// of dataset indices so that "dataset order" and "the earlier workload" are plain comparisons.
#include "kh/gate/representative_set.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "kh/core/error.h"

namespace kh {
namespace {

struct Member {
  std::size_t index = 0;  // in the given workloads (dataset order)
  double latency = 0;     // 0 when unmeasured
  bool measured = false;
};

struct Group {
  std::string name;
  std::vector<Member> members;  // dataset order
  double latency_sum() const {
    double s = 0;
    for (const Member& m : members) s += m.latency;
    return s;
  }
};

void sort_by_dataset_order(std::vector<Member>& members) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.index < b.index; });
}

/// The regimes as groups, with every workload of the partition found among `workloads` and every
/// workload in exactly one regime: a mismatch means the partition was made from another set.
std::vector<Group> regime_groups(const RegimePartition& partition,
                                 const std::vector<Workload>& workloads,
                                 const std::map<std::string, double>& latency) {
  std::map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < workloads.size(); ++i)
    if (!index_of.emplace(workloads[i].uuid, i).second)
      fail("representative selection: workload '{}' is given twice", workloads[i].uuid);
  for (const auto& [uuid, value] : latency)
    if (!std::isfinite(value) || value < 0)
      fail("representative selection: latency of workload '{}' is {}; expected finite and >= 0",
           uuid, value);

  std::vector<Group> groups;
  std::set<std::string> placed;
  for (const Regime& r : partition.regimes) {
    Group g{r.label, {}};
    for (const std::string& uuid : r.workloads) {
      const auto it = index_of.find(uuid);
      if (it == index_of.end())
        fail(
            "representative selection: workload '{}' of regime '{}' ({}) is not among the {} "
            "given workloads",
            uuid, r.label, partition.definition, workloads.size());
      if (!placed.insert(uuid).second)
        fail("representative selection: workload '{}' is in more than one regime of {}", uuid,
             partition.definition);
      const auto lat = latency.find(uuid);
      g.members.push_back(
          {it->second, lat == latency.end() ? 0 : lat->second, lat != latency.end()});
    }
    sort_by_dataset_order(g.members);
    if (!g.members.empty()) groups.push_back(std::move(g));
  }
  for (const Workload& w : workloads)
    if (!placed.count(w.uuid))
      fail("representative selection: workload '{}' is in no regime of the partition of {}", w.uuid,
           partition.definition);
  return groups;
}

/// A workload carrying a third of the latency would dominate whichever regime holds it, hiding
/// how the rest of that regime moves; it is gated on its own.
void take_out_outliers(std::vector<Group>& groups, const std::vector<Workload>& workloads,
                       double total) {
  if (total <= 0) return;
  std::vector<Group> outliers;
  for (Group& g : groups) {
    if (g.members.size() < 2) continue;  // already a group of its own
    std::vector<Member> kept;
    for (const Member& m : g.members) {
      if (m.latency >= kOutlierLatencyShare * total)
        outliers.push_back({fmt::format("{}, outlier {}", g.name, workloads[m.index].uuid), {m}});
      else
        kept.push_back(m);
    }
    g.members = std::move(kept);
  }
  std::erase_if(groups, [](const Group& g) { return g.members.empty(); });
  for (Group& g : outliers) groups.push_back(std::move(g));
}

/// Too few groups give the cheap gate too little to see a regime collapse with; the heaviest group
/// is halved at its median latency because that is where it is most likely to behave in two ways.
void split_to_minimum(std::vector<Group>& groups) {
  while (groups.size() < static_cast<std::size_t>(kMinimumGroups)) {
    Group* target = nullptr;
    for (Group& g : groups)
      if (g.members.size() >= 2 && (!target || g.latency_sum() > target->latency_sum()))
        target = &g;
    if (!target) return;
    std::vector<Member> by_latency = target->members;
    std::stable_sort(by_latency.begin(), by_latency.end(),
                     [](const Member& a, const Member& b) { return a.latency < b.latency; });
    const auto middle = by_latency.begin() + static_cast<std::ptrdiff_t>(by_latency.size() / 2);
    Group lower{target->name + " (lower half)", {by_latency.begin(), middle}};
    Group upper{target->name + " (upper half)", {middle, by_latency.end()}};
    sort_by_dataset_order(lower.members);
    sort_by_dataset_order(upper.members);
    *target = std::move(lower);
    groups.push_back(std::move(upper));
  }
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/// The median pick, then the heaviest member when it alone weighs on the total. Unmeasured
/// members are chosen only when nothing in the group was measured: their latency is unknown, not
/// small.
std::vector<std::size_t> pick_representatives(const Group& g, double total) {
  std::vector<Member> pool;
  for (const Member& m : g.members)
    if (m.measured) pool.push_back(m);
  if (pool.empty()) return {g.members.front().index};

  std::vector<double> latencies;
  for (const Member& m : pool) latencies.push_back(m.latency);
  const double mid = median(latencies);
  const Member* nearest = &pool.front();
  const Member* heaviest = &pool.front();
  for (const Member& m : pool) {  // dataset order: strict comparisons keep the earlier on a tie
    if (std::abs(m.latency - mid) < std::abs(nearest->latency - mid)) nearest = &m;
    if (m.latency > heaviest->latency) heaviest = &m;
  }
  std::vector<std::size_t> picks{nearest->index};
  if (heaviest != nearest && total > 0 && heaviest->latency >= kHeavyWorkloadShare * total)
    picks.push_back(heaviest->index);
  return picks;
}

}  // namespace

RepresentativeSet select_representatives(const RegimePartition& partition,
                                         const std::vector<Workload>& workloads,
                                         const std::map<std::string, double>& latency) {
  std::vector<Group> groups = regime_groups(partition, workloads, latency);
  double total = 0;
  for (const Group& g : groups) total += g.latency_sum();
  take_out_outliers(groups, workloads, total);
  split_to_minimum(groups);

  RepresentativeSet set;
  for (const Group& g : groups) {
    RepresentativeGroup out;
    out.group.name = g.name;
    for (const Member& m : g.members) out.group.workloads.push_back(workloads[m.index].uuid);
    out.latency_share = total > 0 ? g.latency_sum() / total : 0;
    for (std::size_t i : pick_representatives(g, total))
      out.representatives.push_back(workloads[i].uuid);
    set.groups.push_back(std::move(out));
  }
  // Latency share, not workload count, is what a gate's time and the objective are made of.
  std::stable_sort(set.groups.begin(), set.groups.end(),
                   [](const RepresentativeGroup& a, const RepresentativeGroup& b) {
                     return a.latency_share > b.latency_share;
                   });
  std::set<std::string> seen;
  for (const RepresentativeGroup& g : set.groups)
    for (const std::string& uuid : g.representatives)
      if (seen.insert(uuid).second) set.workloads.push_back(uuid);
  return set;
}

}  // namespace kh
