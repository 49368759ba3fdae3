#pragma once
/// What `validate` needs from one plan of `trident plan --format json` (keys in
/// docs/architecture.md): the split, the rank order, each dimension's traffic and the GEMMs.
#include <optional>
#include <string>
#include <vector>

#include "costmodel/collective.h"
#include "costmodel/parallel_config.h"
#include "costmodel/placement.h"
#include "topology/gpu.h"
#include "topology/link_tier.h"

namespace trident {

/// One dimension's traffic as the plan predicts it ("comm": {"tp": {...}}).
struct PlanComm {
  std::string name;                     ///< "tp" | "pp" | "dp" | "cp" | "ep"
  std::vector<Collective> collectives;  ///< "reduce-scatter+all-gather" -> two
  double bytes_per_call = 0.0;          ///< S of each collective, as nccl-tests counts it
  double gather_bytes_per_call = 0.0;   ///< S of the all-gather half (ZeRO: the weights)
  /// S of `collective` in this call: the all-gather half may differ from the rest.
  [[nodiscard]] double bytes_of(Collective collective) const {
    return collective == Collective::all_gather && gather_bytes_per_call > 0.0
               ? gather_bytes_per_call
               : bytes_per_call;
  }
  double calls_per_step = 0.0;
  int ranks = 1;
  Tier tier = Tier::nvlink;
  double time_per_call_s = 0.0;  ///< predicted, all `collectives` of one call together
  /// Label for reports: "tp all-reduce", "dp reduce-scatter+all-gather".
  [[nodiscard]] std::string label() const;
};

/// One GEMM per GPU after the TP split ("gemms": [...]).
struct PlanGemm {
  std::string name;
  long long m = 0;
  long long n = 0;
  long long k = 0;
  double calls_per_step = 0.0;
  double predicted_tflops = 0.0;
  Dtype dtype = Dtype::bf16;  ///< "dtype" (FP8 runs: linear GEMMs fp8, the output layer bf16)
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

struct PlanSpec {
  std::string source;  ///< file name, for messages
  int index = 0;       ///< which of plans[] was read
  ParallelConfig config;
  RankOrder order = RankOrder::tp_dp_pp;
  Dtype dtype = Dtype::bf16;
  std::string gpu;             ///< cluster.gpu (preset name), "" when absent
  std::optional<PlanComm> tp;  ///< absent: no traffic in that dimension (size 1)
  std::optional<PlanComm> pp;
  std::optional<PlanComm> dp;  ///< over DP x CP when cp > 1
  std::optional<PlanComm> cp;  ///< the ring's send-recv or Ulysses' all-to-all
  std::optional<PlanComm> ep;  ///< MoE dispatch/combine all-to-all
  std::vector<PlanGemm> gemms;
  [[nodiscard]] int world_size() const { return config.gpus(); }
};

/// Reads plans[index] of a plan JSON. Throws InputError naming `source` and the key:
/// "plan.json: plans[0].tp: expected a positive integer".
[[nodiscard]] PlanSpec read_plan(const std::string& text, const std::string& source, int index = 0);

}  // namespace trident
