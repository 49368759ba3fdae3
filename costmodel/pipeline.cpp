#include "costmodel/pipeline.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <tuple>
#include <utility>

namespace trident {

namespace {

struct Op {
  int micro_batch = 0;
  int chunk = 0;
  bool is_forward = true;
};

/// The k-th forward (or backward) op of a stage in Megatron's interleaved order: groups of
/// p micro-batches per chunk; backward walks the chunks in reverse.
Op nth_op(int k, int pp, int v, bool forward) {
  const int group = pp * v;
  const int chunk_in_group = (k % group) / pp;
  const int chunk = forward ? chunk_in_group : v - 1 - chunk_in_group;
  return {(k / group) * pp + k % pp, chunk, forward};
}

/// The order one stage runs its ops: warm-up forwards, 1F1B steady state, cool-down
/// backwards (megatron/core/pipeline_parallel/schedules.py).
std::vector<Op> stage_order(int stage, int pp, int m, int v) {
  const int total = m * v;
  const int warmup =
      v == 1 ? std::min(pp - stage - 1, m) : std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
  std::vector<Op> order;
  order.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k) order.push_back(nth_op(k, pp, v, true));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(nth_op(warmup + k, pp, v, true));
    order.push_back(nth_op(k, pp, v, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(nth_op(k, pp, v, false));
  return order;
}

/// End times of every op, -1 while not yet run; indexed [forward][stage][chunk][micro-batch].
class EndTimes {
 public:
  EndTimes(int pp, int m, int v)
      : pp_(pp), m_(m), v_(v), ends_(static_cast<std::size_t>(2 * pp * m * v), -1.0) {}
  double& at(bool forward, int stage, int chunk, int micro_batch) {
    const int index = ((static_cast<int>(forward) * pp_ + stage) * v_ + chunk) * m_ + micro_batch;
    return ends_[static_cast<std::size_t>(index)];
  }

 private:
  int pp_;
  int m_;
  int v_;
  std::vector<double> ends_;
};

/// End of the op on another stage plus the hop, -1 while it has not run.
double after_hop(double end_s, double hop_s) { return end_s < 0.0 ? end_s : end_s + hop_s; }

/// When the input of this op is on this stage: the end of the op it waits for plus hop_s
/// when that op ran on another stage; -1 when it has not run yet, 0 when it waits for none.
double dependency_end(EndTimes& ends, const Op& op, int stage, int pp, int v, double hop_s) {
  if (op.is_forward) {
    if (stage > 0) return after_hop(ends.at(true, stage - 1, op.chunk, op.micro_batch), hop_s);
    if (op.chunk > 0) return after_hop(ends.at(true, pp - 1, op.chunk - 1, op.micro_batch), hop_s);
    return 0.0;
  }
  if (stage < pp - 1) return after_hop(ends.at(false, stage + 1, op.chunk, op.micro_batch), hop_s);
  if (op.chunk < v - 1) return after_hop(ends.at(false, 0, op.chunk + 1, op.micro_batch), hop_s);
  return ends.at(true, pp - 1, v - 1, op.micro_batch);
}

/// Runs every stage's ops in order, a stage at a time, until none can move: `advance(s)` runs
/// stage s's next op (next[s]) and returns false while it must wait for another stage.
template <typename Length, typename Advance>
void run_stages(std::vector<std::size_t>& next, Length length, Advance advance) {
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t s = 0; s < next.size(); ++s) {
      while (next[s] < length(s) && advance(static_cast<int>(s))) {
        ++next[s];
        progress = true;
      }
    }
  }
}

}  // namespace

namespace {

using stage_split::ceil_div;
using stage_split::shortfall_split;

}  // namespace

bool sets_ends(int layers, const ParallelConfig& config) {
  if (!config.pinned_stage_ends()) return false;
  const StageLayers split = stage_layers(layers, config);
  const StageLayers standard = stage_layers(layers, config.pp);
  return split.first != standard.first || split.last != standard.last ||
         middle_stages(layers, config.pp, standard).fewer > 0;
}

StageEndsProblem stage_ends_problem(int layers, int pp, int first, int last,
                                    bool middles_may_differ) {
  if (pp < 2) return StageEndsProblem::no_pipeline;
  if (first < 1 || last < 1) return StageEndsProblem::empty_end;
  const long long rest = static_cast<long long>(layers) - first - last;
  if (pp == 2) return rest != 0 ? StageEndsProblem::layers_left : StageEndsProblem::ok;
  // Every middle stage holds a layer, also where their counts may differ.
  if (rest < pp - 2LL) return StageEndsProblem::middle_empty;
  if (!middles_may_differ && rest % (pp - 2) != 0) return StageEndsProblem::middles_unequal;
  return StageEndsProblem::ok;
}

std::optional<StageLayers> lighter_ends(int layers, int pp, bool middles_may_differ) {
  if (pp < 2) return std::nullopt;
  const StageLayers base = stage_layers(layers, pp);
  if (pp == 2) {
    if (base.last <= 1) return std::nullopt;
    return StageLayers{base.first + 1, 0, base.last - 1};
  }
  // Each middle stage one layer over ceil(L/p); the ends share what is left, at least a layer
  // each (64-bit: (p - 2) x middle of a huge count must not wrap).
  const long long middles = pp - 2LL;
  const long long middle = ceil_div(layers, pp) + 1;
  long long ends = static_cast<long long>(layers) - middles * middle;
  if (ends < 2) {
    // Middle stages of two counts: the ends a layer each, the rest over the middle stages
    // (each at most `middle`, since ends < 2), which must each hold a layer.
    if (!middles_may_differ || layers - 2LL < middles) return std::nullopt;
    ends = 2;
  }
  const long long last = ends / 2;
  const long long rest = static_cast<long long>(layers) - ends;
  const StageLayers out{static_cast<int>(ends - last), static_cast<int>(ceil_div(rest, middles)),
                        static_cast<int>(last)};
  if (out == base) return std::nullopt;  // the default split already (a split of ends 1|1)
  return out;
}

std::optional<StageLayers> lightest_last(int layers, int pp) {
  if (pp < 3) return std::nullopt;
  const StageLayers out = shortfall_split(layers, pp, true);
  if (out == stage_layers(layers, pp)) return std::nullopt;  // none short, or one
  return out;
}

MiddleStages middle_stages(int layers, int pp, const StageLayers& split) {
  if (pp < 3 || split.middle <= 0) return {};
  const int stages = pp - 2;
  const int in_middle = layers - split.first - split.last;
  const int full = std::clamp(in_middle - stages * (split.middle - 1), 0, stages);
  return {full, stages - full};
}

bool ends_only_split(int layers, int pp, int virtual_stages) {
  return ends_only_split(layers, pp, virtual_stages, stage_layers(layers, pp));
}

bool ends_only_split(int layers, int pp, int virtual_stages, const StageLayers& split) {
  if (split.even(pp)) return true;
  if (pp > 2 && middle_stages(layers, pp, split).fewer > 0) return false;
  const int v = std::max(1, virtual_stages);
  const int most = split.most();
  // The counts only shorten the ends: an end heavier than the middle stages is not written.
  if (pp > 2 && split.middle != most) return false;
  if (most % v != 0) return false;
  const int chunk = most / v;
  return most - split.first <= chunk && most - split.last <= chunk;
}

int model_chunk_layers(const Model& model, const ParallelConfig& config) {
  // Rounded up: MTP layers can make the last stage the largest with a count v does not divide
  // (30 layers + 2 MTP over PP 4, VP 2: 7 + 2 in chunks of 5 and 4).
  const int most = model_stage_layers(model, config).most();
  const int v = config.virtual_stages;
  return (most + v - 1) / v;
}

double bubble_fraction(int pp, int virtual_stages, long long micro_batches) {
  if (micro_batches <= 0 || virtual_stages <= 0) return 0.0;
  return (pp - 1.0) / (static_cast<double>(virtual_stages) * static_cast<double>(micro_batches));
}

double fill_drain_ratio(int pp, double first_s, double middle_s, double middles_total_s,
                        double last_s) {
  if (pp <= 1) return 1.0;
  const double bottleneck_s = std::max({first_s, middle_s, last_s});
  if (!(bottleneck_s > 0.0)) return 1.0;
  const double others_s = first_s + middles_total_s + last_s - bottleneck_s;
  return std::clamp(others_s / ((pp - 1.0) * bottleneck_s), 0.0, 1.0);
}

double deferred_output_wgrad_calls(int pp, int limit, long long micro_batches,
                                   double calls_per_micro_batch) {
  if (pp < 2 || micro_batches <= 0 || calls_per_micro_batch <= 0.0) return 0.0;
  const double all_calls = static_cast<double>(micro_batches) * calls_per_micro_batch;
  return limit <= 0 ? all_calls : std::min(static_cast<double>(limit), all_calls);
}

DeferredOutputWgrad deferred_output_wgrad(int pp, int limit, long long micro_batches,
                                          double calls_per_micro_batch,
                                          double wgrad_per_micro_batch_s, double last_margin_s,
                                          double drain_idle_s) {
  DeferredOutputWgrad out;
  if (pp < 2 || micro_batches <= 0 || calls_per_micro_batch <= 0.0 ||
      wgrad_per_micro_batch_s <= 0.0) {
    return out;
  }
  out.calls = deferred_output_wgrad_calls(pp, limit, micro_batches, calls_per_micro_batch);
  const double micro_batches_deferred = out.calls / calls_per_micro_batch;
  out.saved_s =
      micro_batches_deferred * std::min(wgrad_per_micro_batch_s, std::max(0.0, last_margin_s));
  out.deferred_s = micro_batches_deferred * wgrad_per_micro_batch_s;
  out.drain_s = std::max(0.0, drain_idle_s);
  out.exposed_s = std::max(0.0, out.deferred_s - out.drain_s);
  return out;
}

double interleaved_chain_transfers(int pp, int virtual_stages) {
  return 2.0 * (static_cast<double>(pp) * virtual_stages - 1.0);
}

double interleaved_p2p_exposed_s(int pp, int virtual_stages, long long micro_batches, double hop_s,
                                 double stage_forward_s, double stage_backward_s) {
  if (pp <= 1 || virtual_stages <= 0 || micro_batches <= 0 || !(hop_s > 0.0)) return 0.0;
  const double v = virtual_stages;
  const double chain_hops = interleaved_chain_transfers(pp, virtual_stages);
  const double steady_ops = std::max(0.0, static_cast<double>(micro_batches - pp)) * v;
  const double slack_s = std::min(stage_forward_s, stage_backward_s) / v;
  return chain_hops * hop_s + steady_ops * std::max(0.0, hop_s - slack_s);
}

std::vector<ScheduleBlock> schedule_1f1b(int pp, int micro_batches, int virtual_stages,
                                         double t_fwd_s, double t_bwd_s, double hop_s,
                                         ScheduleTail tail) {
  const int m = micro_batches;
  const int v = virtual_stages;
  const double hop = pp > 1 && hop_s > 0.0 ? hop_s : 0.0;  // NaN and negative: none
  std::vector<std::vector<Op>> orders;
  orders.reserve(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) orders.push_back(stage_order(s, pp, m, v));
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> free_at(static_cast<std::size_t>(pp), 0.0);
  std::vector<std::vector<ScheduleBlock>> per_stage(static_cast<std::size_t>(pp));
  EndTimes ends(pp, m, v);
  run_stages(
      next, [&](std::size_t s) { return orders[s].size(); },
      [&](int s) {
        const auto su = static_cast<std::size_t>(s);
        const Op& op = orders[su][next[su]];
        const double ready = dependency_end(ends, op, s, pp, v, hop);
        if (ready < 0.0) return false;
        const double start = std::max(ready, free_at[su]);
        const bool tail_chunk = s == pp - 1 && op.chunk == v - 1;
        const double extra_s =
            tail_chunk ? (op.is_forward ? tail.forward_s : tail.backward_s) : 0.0;
        const double end = start + (op.is_forward ? t_fwd_s : t_bwd_s) / v + extra_s;
        ends.at(op.is_forward, s, op.chunk, op.micro_batch) = end;
        per_stage[su].push_back({s, op.micro_batch, op.chunk, op.is_forward, start, end});
        free_at[su] = end;
        return true;
      });
  std::vector<ScheduleBlock> blocks;
  for (const auto& stage_blocks : per_stage) {
    blocks.insert(blocks.end(), stage_blocks.begin(), stage_blocks.end());
  }
  return blocks;
}

namespace {

enum class DsOp { send_activation, recv_activation, send_grad, recv_grad, forward, backward };

struct DsCommand {
  DsOp op = DsOp::forward;
  int micro_batch = 0;
};

/// Micro-batch and direction of one TrainSchedule step (_step_to_micro_batch).
std::pair<int, bool> ds_step(int step, int stage, int stages) {
  const bool even_step = step % 2 == 0;
  const bool even_stage = stage % 2 == 0;
  if (even_step && even_stage) return {step / 2 - stage / 2, true};
  if (!even_step && !even_stage) return {(step - 1) / 2 - stage / 2, true};
  if (even_step) return {step / 2 - stages + (stage + 1) / 2, false};
  return {(step - 1) / 2 - stages + 1 + stage / 2, false};
}

/// TrainSchedule.steps() of one stage as a command list (the loads and the optimizer left out).
std::vector<DsCommand> ds_commands(int stage, int stages, int m) {
  std::vector<DsCommand> commands;
  const auto valid = [m](int mb) { return mb >= 0 && mb < m; };
  int previous = -1;
  for (int step = 0; step < 2 * (m + stages - 1); ++step) {
    const auto [mb, forward] = ds_step(step, stage, stages);
    if (forward && stage > 0) {
      if (valid(previous)) commands.push_back({DsOp::send_grad, previous});
      if (valid(mb)) commands.push_back({DsOp::recv_activation, mb});
    } else if (!forward && stage < stages - 1) {
      if (valid(mb)) commands.push_back({DsOp::recv_grad, mb});
      if (valid(previous)) commands.push_back({DsOp::send_activation, previous});
    }
    if (valid(mb)) commands.push_back({forward ? DsOp::forward : DsOp::backward, mb});
    previous = mb;
  }
  return commands;
}

/// A transfer's channel: (activation or gradient, micro-batch, sending stage).
using DsChannel = std::tuple<bool, int, int>;

/// The channel of a send or receive command (compute commands have none: not called for them).
DsChannel ds_channel(const DsCommand& c, int stage) {
  switch (c.op) {
    case DsOp::send_activation:
      return {true, c.micro_batch, stage};
    case DsOp::recv_activation:
      return {true, c.micro_batch, stage - 1};
    case DsOp::send_grad:
      return {false, c.micro_batch, stage};
    case DsOp::recv_grad:
      return {false, c.micro_batch, stage + 1};
    case DsOp::forward:
    case DsOp::backward:
      break;
  }
  return {false, -1, -1};
}

/// Transfers one side has reached, waiting for the other: channel -> (stage, arrival time).
using DsWaiting = std::map<DsChannel, std::pair<int, double>>;

/// Stage s reaches a blocking send or receive at its clock. If the other side is already
/// there, both leave hop_s after the later arrival and the other stage moves past its command;
/// returns false while stage s must wait.
bool ds_rendezvous(DsWaiting& waiting, const DsChannel& channel, int s, std::vector<double>& clock,
                   std::vector<std::size_t>& next, double hop_s) {
  const auto su = static_cast<std::size_t>(s);
  const auto found = waiting.find(channel);
  if (found == waiting.end()) {
    waiting.emplace(channel, std::make_pair(s, clock[su]));
    return false;
  }
  if (found->second.first == s) return false;
  const auto other = static_cast<std::size_t>(found->second.first);
  const double end = std::max(found->second.second, clock[su]) + hop_s;
  clock[su] = end;
  clock[other] = end;
  ++next[other];
  waiting.erase(found);
  return true;
}

}  // namespace

double deepspeed_schedule_makespan_s(int pp, int micro_batches, double t_fwd_s, double t_bwd_s,
                                     double hop_s) {
  if (pp <= 0 || micro_batches <= 0) return 0.0;
  const double hop = hop_s > 0.0 ? hop_s : 0.0;  // NaN and negative: none
  std::vector<std::vector<DsCommand>> commands;
  commands.reserve(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) commands.push_back(ds_commands(s, pp, micro_batches));
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> clock(static_cast<std::size_t>(pp), 0.0);
  DsWaiting waiting;
  run_stages(
      next, [&](std::size_t s) { return commands[s].size(); },
      [&](int s) {
        const auto su = static_cast<std::size_t>(s);
        const DsCommand& c = commands[su][next[su]];
        if (c.op != DsOp::forward && c.op != DsOp::backward) {
          // false: blocked until the other side arrives
          return ds_rendezvous(waiting, ds_channel(c, s), s, clock, next, hop);
        }
        clock[su] += c.op == DsOp::forward ? t_fwd_s : t_bwd_s;
        return true;
      });
  return *std::max_element(clock.begin(), clock.end());
}

double deepspeed_p2p_exposed_transfers(int pp, long long micro_batches) {
  if (pp <= 1 || micro_batches <= 0) return 0.0;
  const auto m = static_cast<double>(micro_batches);
  if (micro_batches == 1) return 2.0 * (pp - 1.0);
  if (pp == 2) return 2.0 * m;
  return 4.0 * m + 2.0 * (pp - 4.0);
}

double schedule_makespan_s(const std::vector<ScheduleBlock>& blocks) {
  double end = 0.0;
  for (const auto& block : blocks) end = std::max(end, block.end_s);
  return end;
}

}  // namespace trident
