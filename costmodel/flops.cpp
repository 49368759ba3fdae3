#include "costmodel/flops.h"

#include "costmodel/gemms.h"
#include "costmodel/kernels.h"

namespace trident {

LayerFlops layer_forward_flops(const Model& model, double sequences) {
  // The whole layer is the GEMM list of one GPU without a TP split (costmodel/gemms.h).
  const auto linear = layer_linear_gemms(model, sequences, 1);
  const AttentionGemms core = attention_gemms(model, sequences, 1);
  LayerFlops flops;
  flops.qkv = linear[0].shape.flops();
  flops.scores = core.scores.flops();
  flops.context = core.context.flops();
  flops.out_proj = linear[1].shape.flops();
  flops.ffn = linear[2].shape.flops() + linear[3].shape.flops();
  const auto up = mla_up_gemms(model, sequences, 1);
  flops.mla_up = up[0].shape.flops() + up[1].shape.flops();
  return flops;
}

double logits_forward_flops(const Model& model, double sequences) {
  return logits_gemm(model, sequences, 1).shape.flops();
}

double recompute_forward_flops(const LayerFlops& layer, Recompute recompute,
                               SelectiveKind selective) {
  switch (recompute) {
    case Recompute::none:
      return 0.0;
    case Recompute::selective:
      switch (selective) {
        case SelectiveKind::attention:
          return layer.attention_core();
        case SelectiveKind::per_op:
          return 0.5 * (layer.qkv + layer.out_proj + layer.ffn);
        case SelectiveKind::mla_up_proj:
          return layer.mla_up;
      }
      return 0.0;
    case Recompute::full:
      return layer.total();
  }
  return 0.0;
}

StepFlops step_flops(const Model& model, double global_batch, Recompute recompute,
                     SelectiveKind selective, double full_share, bool fused) {
  const LayerFlops layer = layer_forward_flops(model, global_batch);
  LayerFlops run = layer;  // as the kernels execute it
  if (fused) {
    run.scores *= kFusedCausalShare;
    run.context *= kFusedCausalShare;
  }
  // Multi-token prediction: each module one more layer, its projection and another pass
  // through the output layer.
  const double layers = model.layers + model.mtp_layers;
  const double logits =
      (1.0 + model.mtp_layers) * logits_forward_flops(model, global_batch) +
      model.mtp_layers * mtp_projection_gemm(model, global_batch, 1).shape.flops();
  StepFlops flops;
  flops.model = 3.0 * (layers * layer.total() + logits);
  flops.model_causal = flops.model - 3.0 * layers * 0.5 * layer.attention_core();
  const double repeated = recompute == Recompute::full ? full_share * layers : layers;
  // The attention core as it runs: forward and backward (2x, or a fused kernel's ratio).
  const double core_run = (1.0 + (fused ? kFusedBackwardRatio : 2.0)) * run.attention_core();
  flops.hardware = flops.model + layers * (core_run - 3.0 * layer.attention_core()) +
                   repeated * recompute_forward_flops(run, recompute, selective);
  return flops;
}

}  // namespace trident
