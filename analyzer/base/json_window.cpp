#include "analyzer/base/json_window.h"

namespace perftracker::analyzer {

using json = Json;

json ToJson(const format::Histogram& h) {
  if (h.empty()) return json::object();
  return {{"first_bucket", h.first},
          {"counts", h.counts},
          {"p50_ns", h.Quantile(0.5)},
          {"p99_ns", h.Quantile(0.99)}};
}

namespace {

json FunctionJson(const format::FunctionPattern& p) {
  return {{"id", p.id},
          {"kind", format::KindName(p.kind)},
          {"name", p.name},
          {"parent_id", p.parent_id},
          {"count", p.count},
          {"total_ns", p.total_ns},
          {"self_ns", p.self_ns},
          {"min_ns", p.min_ns},
          {"max_ns", p.max_ns},
          {"wait_ns", p.wait_ns},
          {"bytes", p.bytes},
          {"device_samples", p.device_samples},
          {"device_ns", p.device_ns},
          {"duration", ToJson(p.duration)},
          {"device", ToJson(p.device)},
          {"per_iteration", ToJson(p.per_iteration)},
          {"self_duration", ToJson(p.self_duration)}};
}

json CollectiveJson(const format::CollectivePattern& c) {
  return {{"comm_id", c.comm_id},
          {"comm_size", c.comm_size},
          {"comm_rank", c.comm_rank},
          {"op", format::CollectiveOpName(c.op)},
          {"peer", c.peer},
          {"name", c.name},
          {"bytes", c.bytes},
          {"count", c.count},
          {"host_ns", c.host_ns},
          {"device_samples", c.device_samples},
          {"device_ns", c.device_ns},
          {"device", ToJson(c.device)},
          {"launch_offset", ToJson(c.launch_offset)},
          {"first_seq", c.first_seq},
          {"last_seq_launched", c.last_seq_launched},
          {"last_seq_completed", c.last_seq_completed}};
}

}  // namespace

json ToJson(const format::Window& w) {
  json functions = json::array();
  for (const auto& p : w.functions) {
    functions.push_back(FunctionJson(p));
    if (w.critical_path) functions.back()["critical_ns"] = p.critical_ns;
    if (p.captured != 0) functions.back()["captured"] = p.captured;
    if (p.thread_cpu_ns != 0) functions.back()["thread_cpu_ns"] = p.thread_cpu_ns;
  }
  json collectives = json::array();
  for (const auto& c : w.collectives) collectives.push_back(CollectiveJson(c));
  const auto& it = w.iterations;
  json out = {{"window_seq", w.window_seq},
              {"iter_begin", w.iter_begin},
              {"iter_end", w.iter_end},
              {"start_mono_ns", w.start_mono_ns},
              {"end_mono_ns", w.end_mono_ns},
              {"start_real_ns", w.start_real_ns},
              {"mode", w.detailed ? "detailed" : "light"},
              {"iterations",
               {{"first", it.first},
                {"count", it.count},
                {"total_ns", it.total_ns},
                {"min_ns", it.min_ns},
                {"max_ns", it.max_ns},
                {"duration", ToJson(it.duration)}}},
              {"health",
               {{"dropped_events", w.health.dropped_events},
                {"hook_ns", w.health.hook_ns},
                {"hook_calls", w.health.hook_calls},
                {"dropped_functions", w.health.dropped_functions},
                {"dropped_windows", w.health.dropped_windows}}},
              {"functions", std::move(functions)},
              {"collectives", std::move(collectives)}};
  if (w.critical_path) {  // older files and other writers: unknown, so not printed
    out["critical_path"] = true;
    out["device_idle_ns"] = w.device_idle_ns;
  }
  if (w.cuda_runtimes != 0) out["cuda_runtimes"] = w.cuda_runtimes;
  if (w.python_unrecorded) out["python_unrecorded"] = true;
  if (w.thread_cpu_ns != 0 || w.run_delay_ns != 0) {  // both 0: unknown, so not printed
    out["thread_cpu_ns"] = w.thread_cpu_ns;
    out["run_delay_ns"] = w.run_delay_ns;
  }
  if (!w.signals.empty()) {
    json signals = json::array();
    for (const format::Signal& s : w.signals) {
      json one = {{"name", s.name},       {"kind", format::SignalKindName(s.kind)},
                  {"samples", s.samples}, {"min", s.min},
                  {"max", s.max},         {"sum", s.sum}};
      if (!s.device.empty()) one["device"] = s.device;
      if (s.kind == format::SignalKind::kFlags) one["bits"] = s.bits;
      signals.push_back(std::move(one));
    }
    out["signals"] = std::move(signals);
  }
  return out;
}

json ToJson(const format::LiveState& s) {
  json comms = json::array();
  for (const auto& c : s.comms) {
    comms.push_back({{"comm_id", c.comm_id},
                     {"comm_size", c.comm_size},
                     {"comm_rank", c.comm_rank},
                     {"last_seq_launched", c.last_seq_launched},
                     {"last_seq_completed", c.last_seq_completed},
                     {"inflight_op", format::CollectiveOpName(format::CollectiveOp(c.inflight_op))},
                     {"inflight_since_mono_ns", c.inflight_since_mono_ns}});
  }
  return {{"update_mono_ns", s.update_mono_ns}, {"update_real_ns", s.update_real_ns},
          {"iteration", s.iteration},           {"windows_written", s.windows_written},
          {"comms", std::move(comms)},          {"python_stack", s.python_stack}};
}

json ToJson(const format::Identity& id) {
  json out = {{"job_id", id.job_id},
              {"hostname", id.hostname},
              {"rank", id.rank},
              {"local_rank", id.local_rank},
              {"world_size", id.world_size},
              {"pid", id.pid},
              {"start_real_ns", id.start_real_ns},
              {"start_mono_ns", id.start_mono_ns},
              {"library_version", id.library_version}};
  if (id.helper_of != 0) out["helper_of"] = id.helper_of;  // a helper process of rank `rank`
  return out;
}

}  // namespace perftracker::analyzer
