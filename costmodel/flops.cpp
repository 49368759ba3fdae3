#include "costmodel/flops.h"

namespace trident {

LayerFlops layer_forward_flops(const Model& model, double sequences) {
  const double tokens = sequences * model.seq_len;
  const double h = model.hidden;
  const double h_kv = static_cast<double>(model.kv_hidden());
  const double s = model.seq_len;
  const double matrices = is_gated(model.ffn) ? 3.0 : 2.0;
  LayerFlops flops;
  flops.qkv = 2.0 * tokens * h * (h + 2.0 * h_kv);
  flops.scores = 2.0 * tokens * s * h;
  flops.context = 2.0 * tokens * s * h;
  flops.out_proj = 2.0 * tokens * h * h;
  flops.ffn = 2.0 * tokens * h * model.ffn_hidden * matrices;
  return flops;
}

double logits_forward_flops(const Model& model, double sequences) {
  return 2.0 * sequences * model.seq_len * static_cast<double>(model.hidden) * model.vocab;
}

double recompute_forward_flops(const LayerFlops& layer, Recompute recompute,
                               SelectiveKind selective) {
  switch (recompute) {
    case Recompute::none:
      return 0.0;
    case Recompute::selective:
      return selective == SelectiveKind::attention
                 ? layer.attention_core()
                 : 0.5 * (layer.qkv + layer.out_proj + layer.ffn);
    case Recompute::full:
      return layer.total();
  }
  return 0.0;
}

StepFlops step_flops(const Model& model, double global_batch, Recompute recompute,
                     SelectiveKind selective) {
  const LayerFlops layer = layer_forward_flops(model, global_batch);
  const double layers = model.layers;
  const double logits = logits_forward_flops(model, global_batch);
  StepFlops flops;
  flops.model = 3.0 * (layers * layer.total() + logits);
  flops.model_causal = flops.model - 3.0 * layers * 0.5 * layer.attention_core();
  flops.hardware = flops.model + layers * recompute_forward_flops(layer, recompute, selective);
  return flops;
}

}  // namespace trident
