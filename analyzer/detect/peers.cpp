#include "analyzer/detect/peers.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <unordered_map>

#include "analyzer/base/parallel.h"

namespace perftracker::analyzer {
namespace {

struct Role {
  std::set<std::tuple<uint8_t, uint64_t, uint32_t, bool>> shape;  // op, bytes, size, p2p
  std::set<uint64_t> comms;                                       // collective communicators
  std::vector<uint32_t> functions;  // sorted, one catalog index per name (RoleOf)
};

// `name_of[i]`: the first catalog function with function i's name. A role is the code a rank
// runs, not the call paths it reached it by: which frame was open when a kernel launched or a
// send went out varies with timing (the benchmark's sim_pp pair, one rank's reads slowed: the
// same layer's forward and kernels under other paths on the slow rank, 0.79 alike by path).
Role RoleOf(const Dataset& ds, const RankData& r, const std::vector<uint32_t>& name_of) {
  Role role;
  const auto& colls = ds.catalog.collectives();
  // Functions of the steady state: start-up and shutdown differ between ranks that do the same
  // work (rank 0 hosts the store, imports more, writes the last log), and so does a checkpoint
  // now and then; a role runs its functions in most windows.
  std::vector<uint32_t> slots_with;  // per catalog function
  for (const Slot& s : r.slots) {
    for (size_t i = 0; i < s.collectives.size(); ++i) {
      if (s.collectives[i].count <= 0) continue;
      const CollectiveInfo& c = colls[i];
      if (IsNetOp(c.op)) continue;  // which links cross nodes is placement, not role
      role.shape.insert({static_cast<uint8_t>(c.op), c.bytes, c.comm_size, c.peer >= 0});
      if (c.peer < 0) role.comms.insert(c.comm_id);
    }
    if (slots_with.size() < s.functions.size()) slots_with.resize(s.functions.size());
    for (size_t i = 0; i < s.functions.size(); ++i) slots_with[i] += s.functions[i].count > 0;
  }
  const size_t needed = (r.slots.size() + 1) / 2;
  for (size_t fn = 0; fn < slots_with.size() && fn < name_of.size(); ++fn) {
    if (slots_with[fn] > 0 && slots_with[fn] >= needed) role.functions.push_back(name_of[fn]);
  }
  std::sort(role.functions.begin(), role.functions.end());
  role.functions.erase(std::unique(role.functions.begin(), role.functions.end()),
                       role.functions.end());
  return role;
}

double Jaccard(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  size_t common = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++common, ++i, ++j;
    }
  }
  const size_t all = a.size() + b.size() - common;
  return all == 0 ? 1.0 : static_cast<double>(common) / static_cast<double>(all);
}

size_t Find(std::vector<size_t>& parent, size_t i) {
  while (parent[i] != i) i = parent[i] = parent[parent[i]];
  return i;
}

// Ranks with the same collective shape that share a communicator are one component.
std::vector<std::vector<size_t>> Components(const std::vector<Role>& roles) {
  std::vector<size_t> parent(roles.size());
  std::iota(parent.begin(), parent.end(), 0);
  std::map<std::pair<uint64_t, const void*>, size_t> first_user;
  std::map<decltype(Role::shape), size_t> first_of_shape;
  for (size_t i = 0; i < roles.size(); ++i) {
    const auto [shape_it, fresh] = first_of_shape.try_emplace(roles[i].shape, i);
    const void* shape_key = &shape_it->first;
    if (roles[i].comms.empty() && !fresh) parent[Find(parent, i)] = Find(parent, shape_it->second);
    for (const uint64_t comm : roles[i].comms) {
      const auto [it, added] = first_user.try_emplace({comm, shape_key}, i);
      if (!added) parent[Find(parent, i)] = Find(parent, it->second);
    }
  }
  std::map<size_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < roles.size(); ++i) groups[Find(parent, i)].push_back(i);
  std::vector<std::vector<size_t>> out;
  for (auto& [root, members] : groups) out.push_back(std::move(members));
  return out;
}

// Splits a component where function sets differ (first/last pipeline stage, ...).
void SplitBySimilarity(const std::vector<size_t>& members, const std::vector<Role>& roles,
                       std::vector<std::vector<size_t>>* out) {
  std::vector<std::vector<size_t>> parts;
  for (const size_t m : members) {
    bool placed = false;
    for (auto& part : parts) {
      if (Jaccard(roles[part.front()].functions, roles[m].functions) >= kMinPeerSimilarity) {
        part.push_back(m);
        placed = true;
        break;
      }
    }
    if (!placed) parts.push_back({m});
  }
  // A role is shared: a rank whose work differs from every other rank's (extra periodic work, a
  // larger batch, an extra model branch) is the suspect, and leaving it in a group of its own
  // would compare it with nobody. It stays with the ranks most like it.
  if (members.size() >= 3) {
    std::vector<std::vector<size_t>> shared, alone;
    for (auto& p : parts) (p.size() > 1 ? shared : alone).push_back(std::move(p));
    if (shared.empty() && !alone.empty()) shared.push_back(std::move(alone.back())), alone.pop_back();
    for (auto& a : alone) {
      size_t best = 0;
      double best_similarity = -1;
      for (size_t i = 0; i < shared.size(); ++i) {
        const double s = Jaccard(roles[shared[i].front()].functions, roles[a.front()].functions);
        if (s > best_similarity) best = i, best_similarity = s;
      }
      shared[best].push_back(a.front());
    }
    parts = std::move(shared);
    for (auto& p : parts) std::sort(p.begin(), p.end());
  }
  for (auto& p : parts) out->push_back(std::move(p));
}

}  // namespace

std::string RankListLabel(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) {  // appended, not "-" + std::string&&: GCC bug 105329 (false -Wrestrict at -O3)
      out += '-';
      out += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  return out;
}

std::vector<PeerGroup> GroupPeers(const Dataset& ds) {
  const auto& fns = ds.catalog.functions();
  std::vector<uint32_t> name_of(fns.size());
  std::unordered_map<std::string_view, uint32_t> first;
  for (size_t i = 0; i < fns.size(); ++i) {
    name_of[i] = first.try_emplace(fns[i].name, static_cast<uint32_t>(i)).first->second;
  }
  std::vector<Role> roles(ds.ranks.size());
  ParallelFor(roles.size(), ds.threads,
              [&](size_t i, size_t) { roles[i] = RoleOf(ds, ds.ranks[i], name_of); });
  std::vector<std::vector<size_t>> parts;
  for (const auto& component : Components(roles)) SplitBySimilarity(component, roles, &parts);
  std::sort(parts.begin(), parts.end());
  std::vector<PeerGroup> groups;
  for (auto& members : parts) {
    std::vector<int> ranks;
    for (const size_t m : members) ranks.push_back(ds.ranks[m].rank());
    groups.push_back({std::move(members), "ranks " + RankListLabel(ranks)});
  }
  return groups;
}

}  // namespace perftracker::analyzer
