#include "costmodel/stack.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "costmodel/ep_overlap.h"

namespace trident {

const char* to_string(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::unfused:
      return "unfused";
    case AttentionKernel::flash:
      return "flash";
    case AttentionKernel::cudnn:
      return "cudnn";
    case AttentionKernel::flash_triton:
      return "flash_triton";
  }
  return "?";
}

const char* to_string(TpOverlap overlap) {
  switch (overlap) {
    case TpOverlap::none:
      return "none";
    case TpOverlap::backward:
      return "backward";
    case TpOverlap::userbuffers:
      return "userbuffers";
  }
  return "?";
}

const char* to_string(CpKind kind) {
  switch (kind) {
    case CpKind::p2p:
      return "p2p";
    case CpKind::a2a:
      return "a2a";
    case CpKind::all_gather:
      return "allgather";
  }
  return "p2p";
}

const char* to_string(SelectiveKind kind) {
  switch (kind) {
    case SelectiveKind::attention:
      return "attention";
    case SelectiveKind::per_op:
      return "per_op";
    case SelectiveKind::mla_up_proj:
      return "mla_up_proj";
  }
  return "attention";
}

const char* to_string(PartialRecompute partial) {
  switch (partial) {
    case PartialRecompute::none:
      return "none";
    case PartialRecompute::block:
      return "block";
    case PartialRecompute::every_kth:
      return "every_kth";
  }
  return "none";
}

int every_kth_interval(int chunk_layers, int recomputed) {
  if (recomputed < 1 || recomputed >= chunk_layers) return 0;
  return chunk_layers % recomputed == 0 ? chunk_layers / recomputed : 0;
}

bool Stack::runs_partial_recompute(int chunk_layers, int recomputed, bool even_stages) const {
  if (recomputed < 1 || recomputed >= chunk_layers) return false;
  switch (partial_recompute) {
    case PartialRecompute::none:
      return false;
    case PartialRecompute::block:
      return true;
    case PartialRecompute::every_kth:
      return even_stages && every_kth_interval(chunk_layers, recomputed) > 0;
  }
  return false;
}

bool selective_applies(SelectiveKind kind, const Model& model) {
  return kind != SelectiveKind::mla_up_proj || model.attention == AttentionKind::mla;
}

bool Stack::supports_zero(int zero, int pp) const {
  if (zero < 0 || zero > 3) return false;
  const unsigned bits = pp > 1 ? zero_stages_with_pp : zero_stages;
  return (bits & (1u << zero)) != 0;
}

namespace {

/// Weight gradients come out of the GEMMs in the training dtype's width: 16-bit (fp8
/// training's too), fp32 for fp32/tf32 training.
double weight_gradient_bytes(Dtype dtype) {
  return dtype == Dtype::fp32 || dtype == Dtype::tf32 ? 4.0 : 2.0;
}

}  // namespace

double Stack::loss_bytes_per_logit_at(int tp) const {
  return tp > 1 && loss_parallel_bytes_per_logit > 0.0 ? loss_parallel_bytes_per_logit
                                                       : loss_bytes_per_logit;
}

double Stack::reduce_bytes(Dtype dtype) const {
  return dtype == Dtype::fp16 && fp16_grads_in_fp16 ? 2.0 : grad_reduce_bytes;
}

double Stack::reduce_bytes(Dtype dtype, const ParallelConfig& config) const {
  const bool zero_optimizer = zero_reduce_bytes > 0.0 && config.zero >= 1 && config.pp == 1;
  return zero_optimizer ? zero_reduce_bytes : reduce_bytes(dtype);
}

double Stack::buffer_bytes(Dtype dtype) const {
  return dtype == Dtype::fp16 && fp16_grads_in_fp16 ? 2.0 : grad_buffer_bytes;
}

namespace {

/// HBM bytes per gradient element of one accumulation pass: read the fresh gradient, read and
/// write the buffer (add_cast: cast through the buffer's dtype once more).
double accumulation_bytes(GradAccumulation pass, double gradient, double buffer) {
  if (pass == GradAccumulation::none) return 0.0;
  const bool cast = pass == GradAccumulation::add_cast && buffer != gradient;
  return gradient + 2.0 * buffer + (cast ? 2.0 * buffer : 0.0);
}

}  // namespace

double Stack::embedding_gradient_bytes(Dtype dtype, const ParallelConfig& config, bool tied) const {
  const double gradient = weight_gradient_bytes(dtype);
  const bool hook_add = zeroes_grad_buffer && grad_accumulation_bytes(dtype, config) == 0.0;
  if (!hook_add) return gradient;
  // Tied on one stage (Megatron-Core's zero_out_wgrad, language_module.py L63-67, layers.py
  // L508-514 @core_r0.8.0): the output layer's dummy gradient is a torch.zeros (write 1) and
  // autograd sums it with the embedding's (read 2, write 1) before the one hook add.
  const double dummy_sum = tied ? 4.0 * gradient : 0.0;
  return gradient + dummy_sum +
         accumulation_bytes(GradAccumulation::add, gradient, buffer_bytes(dtype));
}

double Stack::grad_accumulation_bytes(Dtype dtype, const ParallelConfig& config) const {
  const GradAccumulation pass = config.pp == 1 ? grad_accumulation_without_pp : grad_accumulation;
  return accumulation_bytes(pass, weight_gradient_bytes(dtype), buffer_bytes(dtype));
}

double Stack::gradient_cat_bytes(Dtype dtype) const {
  return zero3_gradient_cat ? 2.0 * weight_gradient_bytes(dtype) : 0.0;
}

double Stack::reduce_scatter_copy_in_bytes(Dtype dtype) const {
  if (!reduce_scatter_copy_in) return 0.0;
  return weight_gradient_bytes(dtype) + reduce_bytes(dtype);
}

double Stack::error_for(const Model& model) const {
  return model.is_moe() && measured_error_moe > 0.0 ? measured_error_moe : measured_error;
}

bool Stack::supports(Fp8Recipe recipe) const {
  return (fp8_recipes & (1u << static_cast<unsigned>(recipe))) != 0;
}

std::vector<Fp8Recipe> Stack::fp8_recipes_run() const {
  std::vector<Fp8Recipe> run;
  for (const Fp8Recipe recipe : kFp8Recipes) {
    if (supports(recipe)) run.push_back(recipe);
  }
  return run;
}

bool Stack::runs_ep_overlap(const Model& model, const ParallelConfig& config) const {
  return ep_overlap && combined_1f1b_runs(model, config);
}

bool Stack::supports(Recompute recompute) const {
  return (recompute_modes & (1u << static_cast<unsigned>(recompute))) != 0;
}

namespace {

/// "FILE:LINE: attention" where the stack's file set it, else "stack NAME: attention".
std::string attention_key(const Stack& stack) {
  return stack.attention_from.empty() ? "stack " + stack.name + ": attention"
                                      : stack.attention_from;
}

}  // namespace

void check_stack_on_gpu(const Stack& stack, const Gpu& gpu) {
  if (is_fused(stack.attention) && gpu.compute_capability > 0.0 &&
      gpu.compute_capability < kFusedAttentionMinCapability) {
    throw InputError(fmt::format(
        "{}: {} needs a GPU of compute capability {:.1f} or more (cuDNN fused "
        "attention and FlashAttention 2 run on sm80 and later); {} is {:.1f}: use a stack "
        "with attention: unfused, the attention that runs there (megatron-2021 is one)",
        attention_key(stack), to_string(stack.attention), kFusedAttentionMinCapability, gpu.name,
        gpu.compute_capability));
  }
  if (stack.attention != AttentionKernel::flash_triton || !gpu.flash_triton_causal.empty()) return;
  throw InputError(
      fmt::format("{}: flash_triton has no measured rate on {} (its GPU file has no "
                  "flash_triton_causal_curve); use attention: flash, or a GPU file with that curve",
                  attention_key(stack), gpu.name));
}

bool cudnn_trains_heads(const Stack& stack, int qk, int v, const Gpu& gpu) {
  const double cc = gpu.compute_capability;
  if (cc <= 0.0) return true;  // an unknown GPU: nothing to refuse on
  if (qk % kCudnnHeadMultiple != 0 || v % kCudnnHeadMultiple != 0) return false;
  if (qk <= kCudnnNarrowHeadMax && v <= kCudnnNarrowHeadMax) return true;
  if (cc < kCudnnHopperCapability) return false;
  if (cc < kCudnnBlackwellCapability) return qk <= kCudnnHopperHeadMax && v <= kCudnnHopperHeadMax;
  for (std::size_t i = 0; i < std::size(kCudnnBlackwellHeads); ++i) {
    const HeadShape shape = kCudnnBlackwellHeads[i];
    if ((stack.cudnn_blackwell_heads & (1u << i)) != 0 && shape.qk == qk && shape.v == v) {
      return true;
    }
  }
  return false;
}

bool flash2_takes_heads(int qk, int v, const Gpu& gpu) {
  if (qk != v || qk > kFlash2HeadMax || qk % kFlash2HeadMultiple != 0) return false;
  if (qk <= kFlash2WideHeadFrom) return true;
  // Heads over 192 only where flash-attn builds their backward (TE get_attention_backend
  // @v2.2.1 L479-497: sm80, sm90, sm100, sm120).
  const double cc = gpu.compute_capability;
  return cc <= 0.0 || std::ranges::find(kFlash2WideHeadCapabilities, cc) !=
                          std::end(kFlash2WideHeadCapabilities);
}

AttentionKernel attention_run(const Stack& stack, const Model& model, const Gpu& gpu) {
  if (stack.attention != AttentionKernel::cudnn) return stack.attention;
  const int qk = model.qk_head_dim();
  const int v = model.v_head_dim();
  if (cudnn_trains_heads(stack, qk, v, gpu)) return AttentionKernel::cudnn;
  return flash2_takes_heads(qk, v, gpu) ? AttentionKernel::flash : AttentionKernel::unfused;
}

namespace {

/// Whether the stack's FlashAttention kernel takes the heads: FlashAttention 2's rule
/// (flash2_takes_heads), the Triton kernel's equal heads up to 128 (flash_attn_triton.py:
/// "FlashAttention only support head dimensions up to 128").
bool flash_takes_heads(AttentionKernel kernel, int qk, int v, const Gpu& gpu) {
  if (kernel == AttentionKernel::flash_triton) return qk == v && qk <= kFlashTritonHeadMax;
  return flash2_takes_heads(qk, v, gpu);
}

/// Whether cuDNN's FP8 fused attention trains heads of (qk, v) dims on `gpu`: on Hopper
/// exactly 128, on Blackwell up to 128 in multiples of 16 (fused_attn.cpp
/// nvte_get_fused_attn_backend's FP8 branch @v2.18 L258-283: "sm90 ... is_training &&
/// head_dim_qk == 128 && head_dim_v == 128", "sm_arch_ >= 100 && head_dim_qk <= 128"; its
/// 192/128 on Blackwell needs cuDNN 9.21, not modelled); an unknown GPU refuses nothing.
bool cudnn_fp8_trains_heads(int qk, int v, const Gpu& gpu) {
  const double cc = gpu.compute_capability;
  if (cc <= 0.0) return true;
  if (cc < kCudnnBlackwellCapability) return qk == kCudnnNarrowHeadMax && v == kCudnnNarrowHeadMax;
  return qk <= kCudnnNarrowHeadMax && v <= kCudnnNarrowHeadMax && qk % kCudnnFp8HeadMultiple == 0 &&
         v % kCudnnFp8HeadMultiple == 0;
}

/// FP8 attention runs only in cuDNN's fused attention (Stack::runs_fp8_attention), whose FP8
/// kernels take fewer heads than its 16-bit ones (cudnn_fp8_trains_heads); TE has no other FP8
/// attention (get_attention_backend @v2.2.1 disables FlashAttention and the unfused attention
/// for it), so the model's FP8 attention is refused there, naming its key.
void check_fp8_attention_heads(const Stack& stack, const Model& model, const Gpu& gpu) {
  const Training& training = model.training;
  if (training.dtype != Dtype::fp8 || !training.fp8.attention || !stack.runs_fp8_attention()) {
    return;
  }
  const int qk = model.qk_head_dim();
  const int v = model.v_head_dim();
  if (cudnn_fp8_trains_heads(qk, v, gpu)) return;
  const std::string where = model.key_where(training.fp8_attention_from, "training.fp8.attention");
  throw InputError(fmt::format(
      "{}: cuDNN's FP8 attention, the only one Transformer Engine has, trains no {}/{} heads "
      "on {} (compute capability {:.1f}: {}); set it false",
      where, qk, v, gpu.name, gpu.compute_capability,
      gpu.compute_capability < kCudnnBlackwellCapability ? "heads of 128 only"
                                                         : "heads up to 128, multiples of 16"));
}

}  // namespace

void check_stack_for_model(const Stack& stack, const Model& model, const Gpu& gpu) {
  check_fp8_attention_heads(stack, model, gpu);
  if (stack.attention != AttentionKernel::flash &&
      stack.attention != AttentionKernel::flash_triton) {
    return;
  }
  const int qk = model.qk_head_dim();
  const int v = model.v_head_dim();
  if (flash_takes_heads(stack.attention, qk, v, gpu)) return;
  // The kernels that do take them, for the fix.
  std::vector<std::string> instead = {"unfused"};
  if (stack.attention == AttentionKernel::flash_triton && flash2_takes_heads(qk, v, gpu)) {
    instead.emplace_back("flash");
  }
  if (cudnn_trains_heads(stack, qk, v, gpu)) instead.emplace_back("cudnn");
  std::string kernels = instead.front();
  for (std::size_t i = 1; i < instead.size(); ++i) {
    kernels += (i + 1 == instead.size() ? " or " : ", ") + instead[i];
  }
  throw InputError(fmt::format(
      "{}: {} takes no {}/{} heads (Q/K and V head dims) on {}: FlashAttention 2 takes equal ones "
      "up to 256, multiples of 8 (over 192 on compute capability 8.0, 9.0, 10.0 and 12.0 only), "
      "its Triton kernel up to 128; Transformer Engine falls back to {} there, PyTorch's SDPA "
      "to a kernel with no rate here: use a stack with attention: {}",
      attention_key(stack), to_string(stack.attention), qk, v, gpu.name,
      flash2_takes_heads(qk, v, gpu) ? "FlashAttention 2" : "its unfused attention", kernels));
}

void check_stack_for_dtype(const Stack& stack, Dtype dtype) {
  if (!is_fused(stack.attention) || (dtype != Dtype::fp32 && dtype != Dtype::tf32)) return;
  // The preset the kernel came from ("stack NAME: attention"), the base a file can name.
  const std::string& from = stack.attention_from;
  const std::size_t colon = from.find(':');
  const std::string base = from.rfind("stack ", 0) == 0 && colon != std::string::npos
                               ? "base: " + from.substr(6, colon - 6)
                               : std::string("on the same base");
  throw InputError(fmt::format(
      "stack {}: attention {} has no {} kernel (cuDNN's fused attention and FlashAttention run "
      "fp16/bf16 and FP8; in {} Transformer Engine falls back to its unfused attention, "
      "PyTorch's SDPA to its math kernel, priced as attention: unfused): use a stack file with "
      "attention: unfused ({}) for a {} run",
      stack.name, to_string(stack.attention), to_string(dtype), to_string(dtype), base,
      to_string(dtype)));
}

void check_stack_runs(const Stack& stack, const Model& model, const Gpu& gpu) {
  check_stack_on_gpu(stack, gpu);
  check_stack_for_model(stack, model, gpu);
  check_stack_for_dtype(stack, model.training.dtype);
}

bool Stack::gathers_fp8_params_in_16_bits(const Training& training, int shard_ranks) const {
  if (training.dtype != Dtype::fp8 || !training.fp8.params) return false;
  // torchao's float8 all-gather is tensorwise scaling's: its rowwise recipe (blockwise here)
  // casts each gathered 16-bit weight per GEMM (torchtitan writes enable_fsdp_float8_all_gather
  // for tensorwise only: planner/export_torchtitan.cpp float8_section).
  if (!fp8_saves_fp8_inputs && training.fp8.recipe == Fp8Recipe::blockwise) return true;
  return fp8_param_gather_needs_dp_shard && shard_ranks <= 1;
}

}  // namespace trident
