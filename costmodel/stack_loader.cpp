/// Reading a stack file or preset: keys, ranges, `base:` chains (costmodel/stack.h declares
/// load_stack and stack_preset; the file format is in docs/cost_model.md#stacks).
#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "configs/presets.h"
#include "costmodel/stack.h"
#include "topology/cluster_loader.h"
#include "topology/yaml_util.h"

namespace trident {

namespace {

using yaml::MapReader;
using yaml::Range;

const std::vector<std::string> kStackKeys = {
    "name",
    "base",
    "attention",
    "cudnn_blackwell_heads",
    "unfused_softmax",
    "tp_overlap",
    "pp_overlap",
    "pp_separate_send_recv",
    "pp_sends_attention_mask",
    "pp_scatter_gather",
    "pp_tp_gathers_per_micro_batch",
    "pp_recv_buffers_per_micro_batch",
    "pp_keeps_outputs",
    "dp_overlap_grad_reduce",
    "dp_overlap_grad_reduce_with_pp",
    "dp_overlap_grad_reduce_with_sp",
    "dp_overlap_param_gather",
    "dp_sync_per_chunk",
    "dp_param_gather_in_fill",
    "dp_bucket_parameters",
    "dp_bucket_parameters_per_rank",
    "grad_reduce_bytes",
    "zero_reduce_bytes",
    "grad_buffer_bytes",
    "grad_accumulation",
    "grad_accumulation_without_pp",
    "zeroes_grad_buffer",
    "grad_nan_check",
    "grad_prescale",
    "zero_stages",
    "zero_stages_with_pp",
    "prefetch_units",
    "backward_prefetch",
    "fp16_grads_in_fp16",
    "reshard_after_forward",
    "reduce_every_micro_batch",
    "reduce_scatter_copy_in",
    "zero3_gather_copy_out",
    "zero3_gradient_cat",
    "pp_keeps_gathered_weights",
    "pp_bulk_reduce_scatter",
    "edge_unit",
    "zero3_side_stream_pools",
    "zero1_all_reduces_gradients",
    "pp_keeps_last_reduce_scatter_input",
    "zero2_per_unit",
    "hybrid_shard",
    "tp_pp_dp_order",
    "zero0_one_dimensional",
    "sequence_parallel",
    "sequence_parallel_required",
    "interleaved_pipeline",
    "uneven_stages",
    "uneven_stages_ends_only",
    "stage_ends_pinned",
    "recompute",
    "selective",
    "partial_recompute",
    "kernel_launch_us",
    "kernels_per_layer_forward",
    "adam_state_bytes",
    "adam_step_bytes",
    "loss_bytes_per_logit",
    "loss_parallel_bytes_per_logit",
    "loss_forward_bytes_per_logit",
    "loss_backward_bytes_per_logit",
    "tp_keeps_gathered_inputs",
    "zero3_fp32_shard_only",
    "measured_error",
    "measured_error_moe",
    "context_parallel",
    "expert_parallel",
    "ep_overlap",
    "ep_overlap_delay_wgrad",
    "moe_shared_expert_overlap",
    "defer_output_wgrad",
    "output_wgrad_deferral_limit",
    "moe_permute_fusion",
    "moe_fp8_padding_copies",
    "moe_dispatcher",
    "fp8_param_gather_needs_dp_shard",
    "fp8_params_need_sharded_optimizer",
    "sharded_optimizer_adam_only",
    "fp8_recipes",
    "dtypes",
    "zero_clones_fp32_partition",
    "fp8_weight_cache",
    "fp8_saves_fp8_inputs",
    "fp8_tn_only",
    "fp8_current_amax_over_tp",
    "rmsnorm_bytes_per_element",
    "rope_bytes_per_element",
    "mla_rope_bytes_per_element",
    "glu_bytes_per_element",
    "gqa_repeat_kv",
};
const std::vector<std::string> kAttentionNames = {"unfused", "flash", "cudnn", "flash_triton"};
const std::vector<std::string> kUnfusedSoftmaxNames = {"transformer_engine", "megatron"};
const std::vector<std::string> kTpOverlapNames = {"none", "backward", "userbuffers"};
const std::vector<std::string> kSelectiveNames = {"attention", "per_op", "mla_up_proj"};
const std::vector<std::string> kPartialRecomputeNames = {"none", "block", "every_kth"};
const std::vector<std::string> kPrefetchNames = {"pre", "post", "none"};
const std::vector<std::string> kEdgeUnitNames = {"none", "root", "embedding"};
const std::vector<std::string> kMoeDispatcherNames = {"alltoall", "hybridep"};
const std::vector<std::string> kAccumulationNames = {"none", "add", "add_cast"};
const std::vector<std::string> kKeptOutputNames = {"none", "in_flight", "last", "all"};
const std::vector<std::string> kRecomputeNames = {"none", "selective", "full"};

/// kCudnnBlackwellHeads as the names a stack file lists them by ("192/128", ...).
std::vector<std::string> blackwell_head_names() {
  std::vector<std::string> names;
  for (const HeadShape shape : kCudnnBlackwellHeads) {
    names.push_back(std::to_string(shape.qk) + "/" + std::to_string(shape.v));
  }
  return names;
}

/// A list of ZeRO stages ([0, 1, 3]) as a bit set.
unsigned read_zero_list(const MapReader& m, std::string_view key, unsigned fallback) {
  if (!m.has(key)) return fallback;
  const YAML::Node list = m.node(key);
  const std::string where = yaml::position(m.source(), m.line(key), m.path(key));
  if (!list.IsSequence()) {
    throw InputError(where + ": expected a list of ZeRO stages like [0, 1], got " +
                     yaml::describe_value(list));
  }
  unsigned bits = 0;
  for (const auto& item : list) {
    const long long stage = yaml::to_int(item, Range::non_negative, where);
    if (stage > 3)
      throw InputError(where + ": expected ZeRO stages 0..3, got " + std::to_string(stage));
    if ((bits & (1u << stage)) != 0) {
      throw InputError(where + ": ZeRO stage " + std::to_string(stage) + " listed twice");
    }
    bits |= 1u << stage;
  }
  return bits;
}

/// A list of names under `key` as bits (bit i = names[i]); `fallback` when the key is absent.
unsigned read_name_list(const MapReader& m, std::string_view key,
                        const std::vector<std::string>& names, unsigned fallback,
                        bool allow_empty) {
  if (!m.has(key)) return fallback;
  const YAML::Node list = m.node(key);
  const std::string where = yaml::position(m.source(), m.line(key), m.path(key));
  std::string choices;
  for (const std::string& name : names) choices += (choices.empty() ? "" : "|") + name;
  if (!list.IsSequence()) {
    throw InputError(where + ": expected a list of " + choices + ", got " +
                     yaml::describe_value(list));
  }
  unsigned bits = 0;
  for (const auto& item : list) {
    const std::string name = yaml::to_string(item, where);
    std::size_t i = 0;
    while (i < names.size() && names[i] != name) ++i;
    if (i == names.size()) {
      throw InputError(fmt::format("{}: expected {}, got '{}'{}", where, choices, name,
                                   yaml::did_you_mean(name, names)));
    }
    if ((bits & (1u << i)) != 0) {
      throw InputError(fmt::format("{}: '{}' listed twice", where, name));
    }
    bits |= 1u << i;
  }
  if (bits == 0 && !allow_empty) throw InputError(where + ": expected at least one of " + choices);
  return bits;
}

const std::vector<std::string> kCpKindNames = {"p2p", "a2a", "allgather"};

/// What a stack file without `base:` gets for each key it leaves out.
Stack file_defaults() {
  Stack s;
  s.pp_overlap = false;
  s.pp_scatter_gather = true;
  s.pp_tp_gathers_per_micro_batch = 2;
  s.pp_recv_buffers_per_micro_batch = false;
  s.pp_keeps_outputs = PpKeptOutputs::none;
  s.dp_overlap_grad_reduce = false;
  s.dp_overlap_param_gather = false;
  s.dp_sync_per_chunk = false;
  s.dp_param_gather_in_fill = false;
  s.dp_bucket_parameters = 4.0e7;
  s.dp_bucket_parameters_per_rank = 0.0;
  s.grad_reduce_bytes = 4.0;
  s.zero_reduce_bytes = 0.0;
  s.grad_buffer_bytes = 4.0;
  s.grad_accumulation = GradAccumulation::none;
  s.grad_accumulation_without_pp = GradAccumulation::none;
  s.zeroes_grad_buffer = false;
  s.grad_nan_check = false;
  s.grad_prescale = false;
  s.zero_stages = 0b0011;
  s.prefetch_units = 1;
  s.backward_prefetch = BackwardPrefetch::pre;
  s.fp16_grads_in_fp16 = false;
  s.reshard_after_forward = true;
  s.reduce_every_micro_batch = true;
  s.reduce_scatter_copy_in = false;
  s.zero3_gather_copy_out = false;
  s.zero3_gradient_cat = false;
  s.pp_keeps_gathered_weights = true;
  s.pp_bulk_reduce_scatter = false;
  s.edge_unit = EdgeUnit::none;
  s.zero3_side_stream_pools = false;
  s.zero1_all_reduces_gradients = false;
  s.pp_keeps_last_reduce_scatter_input = false;
  s.zero2_per_unit = false;
  s.hybrid_shard = false;
  s.tp_pp_dp_order = false;
  s.zero0_one_dimensional = false;
  s.sequence_parallel = false;
  s.sequence_parallel_required = false;
  s.interleaved_pipeline = false;
  s.uneven_stages = false;
  s.uneven_stages_ends_only = false;
  s.stage_ends_pinned = false;
  s.recompute_modes = 0b111;
  s.fp8_recipes = 0;
  s.cudnn_blackwell_heads = 0;
  s.fp8_weight_cache = false;
  s.fp8_saves_fp8_inputs = false;
  s.fp8_current_amax_over_tp = false;
  s.selective = SelectiveKind::attention;
  s.partial_recompute = PartialRecompute::none;
  s.kernel_launch_us = 0.0;
  s.kernels_per_layer_forward = 0.0;
  s.adam_state_bytes = 12.0;
  s.adam_step_bytes = 34.0;
  s.zero3_fp32_shard_only = false;
  s.loss_bytes_per_logit = 6.0;
  s.loss_parallel_bytes_per_logit = 0.0;
  s.loss_forward_bytes_per_logit = kCrossEntropyForwardBytesPerLogit;
  s.loss_backward_bytes_per_logit = kCrossEntropyBackwardBytesPerLogit;
  s.tp_keeps_gathered_inputs = false;
  s.measured_error = 0.0;
  s.measured_error_moe = 0.0;
  s.cp_kinds = 0;
  s.expert_parallel = false;
  s.ep_overlap = false;
  s.ep_overlap_delay_wgrad = false;
  s.moe_shared_expert_overlap = false;
  s.defer_output_wgrad = false;
  s.output_wgrad_deferral_limit = 0;
  s.moe_permute_fusion = false;
  s.moe_fp8_padding_copies = false;
  s.fp8_param_gather_needs_dp_shard = false;
  return s;
}

/// Separate blocking sends and receives are priced from DeepSpeed's 1F1B schedule only: refused
/// with overlapped p2p or interleaving, naming the key this file sets.
void check_separate_send_recv(const MapReader& m, const Stack& s) {
  if (!s.pp_separate_send_recv || (!s.pp_overlap && !s.interleaved_pipeline)) return;
  const char* why =
      "true prices DeepSpeed's 1F1B pipeline (separate blocking sends and receives); it needs "
      "pp_overlap: false and interleaved_pipeline: false";
  if (m.has("pp_separate_send_recv")) m.fail("pp_separate_send_recv", why);
  m.fail(s.pp_overlap ? "pp_overlap" : "interleaved_pipeline",
         "true, but the base stack sends and receives apart (pp_separate_send_recv: true), "
         "which is priced for DeepSpeed's 1F1B only");
}

/// ZeRO stage bits as a stack file lists them: "[0, 1]".
std::string zero_list_text(unsigned stages) {
  std::string out;
  for (int zero = 0; zero <= 3; ++zero) {
    if ((stages & (1u << zero)) == 0) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(zero);
  }
  return "[" + out + "]";
}

/// "stacks/my-stack.yaml" -> "my-stack": the file name without its directories and extension
/// (a source that is no file, "built-in stack NAME", has no slash and no dot to strip).
std::string file_stem(const std::string& source) {
  const std::size_t slash = source.find_last_of('/');
  std::string name = slash == std::string::npos ? source : source.substr(slash + 1);
  const std::size_t dot = name.find_last_of('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name.empty() ? source : name;
}

/// Keys a file sets that describe one runtime and make no sense beside another: FSDP2's
/// all-gather copy-out and FSDP1's gradient cat (one or the other, and only where the stack
/// shards per unit), and Transformer Engine 1.x's FP8 layout (only on TE's FP8 linears).
void check_runtime_keys(const MapReader& m, const Stack& s) {
  const bool copy_out = m.has("zero3_gather_copy_out") && s.zero3_gather_copy_out;
  const bool cat = m.has("zero3_gradient_cat") && s.zero3_gradient_cat;
  if (s.zero3_gather_copy_out && s.zero3_gradient_cat && (copy_out || cat)) {
    m.fail(cat ? "zero3_gradient_cat" : "zero3_gather_copy_out",
           "zero3_gather_copy_out (FSDP2) and zero3_gradient_cat (FSDP1) are two runtimes' "
           "copies; set the other false");
  }
  bool per_unit = false;
  for (const int zero : {2, 3}) {
    per_unit = per_unit || ((s.zero_stages & (1U << zero)) != 0 && s.shards_per_unit(zero));
  }
  if ((copy_out || cat) && !per_unit) {
    m.fail(copy_out ? "zero3_gather_copy_out" : "zero3_gradient_cat",
           "true needs sharding per unit (zero_stages with 3, or 2 with zero2_per_unit: true)");
  }
  if (m.has("fp8_tn_only") && s.fp8_tn_only && (!s.fp8_saves_fp8_inputs || s.fp8_recipes == 0)) {
    m.fail("fp8_tn_only",
           "true needs Transformer Engine's FP8 linears (fp8_saves_fp8_inputs: true and an "
           "fp8_recipes entry)");
  }
}

/// `base`: the preset a file names with `base:`, whose values stand for the keys the file
/// leaves out (nullptr: file_defaults, and `attention` / `tp_overlap` are required).
Stack read_stack(const MapReader& m, const Stack* base) {
  m.reject_unknown(kStackKeys);
  const Stack d = base != nullptr ? *base : file_defaults();
  Stack s = d;
  // A file on a base may leave its name out too: the file's own name stands for it.
  s.name = base != nullptr ? m.optional_string("name", file_stem(m.source()))
                           : m.required_string("name");
  if (base != nullptr) {
    s.attention = static_cast<AttentionKernel>(
        m.optional_choice("attention", kAttentionNames, static_cast<int>(d.attention)));
    s.tp_overlap = static_cast<TpOverlap>(
        m.optional_choice("tp_overlap", kTpOverlapNames, static_cast<int>(d.tp_overlap)));
  } else {
    s.attention = static_cast<AttentionKernel>(m.required_choice("attention", kAttentionNames));
    s.tp_overlap = static_cast<TpOverlap>(m.required_choice("tp_overlap", kTpOverlapNames));
  }
  if (m.has("attention")) {
    s.attention_from = yaml::position(m.source(), m.line("attention"), m.path("attention"));
  }
  s.pp_overlap = m.optional_bool("pp_overlap", d.pp_overlap);
  s.pp_separate_send_recv = m.optional_bool("pp_separate_send_recv", d.pp_separate_send_recv);
  s.pp_sends_attention_mask = m.optional_bool("pp_sends_attention_mask", d.pp_sends_attention_mask);
  s.pp_scatter_gather = m.optional_bool("pp_scatter_gather", d.pp_scatter_gather);
  s.pp_tp_gathers_per_micro_batch = static_cast<int>(m.optional_int(
      "pp_tp_gathers_per_micro_batch", d.pp_tp_gathers_per_micro_batch, Range::non_negative));
  if (s.pp_tp_gathers_per_micro_batch > 8)
    m.fail("pp_tp_gathers_per_micro_batch", "expected at most 8");
  s.pp_recv_buffers_per_micro_batch =
      m.optional_bool("pp_recv_buffers_per_micro_batch", d.pp_recv_buffers_per_micro_batch);
  s.pp_keeps_outputs = static_cast<PpKeptOutputs>(m.optional_choice(
      "pp_keeps_outputs", kKeptOutputNames, static_cast<int>(d.pp_keeps_outputs)));
  s.dp_overlap_grad_reduce = m.optional_bool("dp_overlap_grad_reduce", d.dp_overlap_grad_reduce);
  s.dp_overlap_grad_reduce_with_pp =
      m.optional_bool("dp_overlap_grad_reduce_with_pp", d.dp_overlap_grad_reduce_with_pp);
  s.dp_overlap_grad_reduce_with_sp =
      m.optional_bool("dp_overlap_grad_reduce_with_sp", d.dp_overlap_grad_reduce_with_sp);
  s.dp_overlap_param_gather = m.optional_bool("dp_overlap_param_gather", d.dp_overlap_param_gather);
  s.dp_sync_per_chunk = m.optional_bool("dp_sync_per_chunk", d.dp_sync_per_chunk);
  s.dp_param_gather_in_fill = m.optional_bool("dp_param_gather_in_fill", d.dp_param_gather_in_fill);
  s.dp_bucket_parameters =
      m.optional_double("dp_bucket_parameters", d.dp_bucket_parameters, Range::positive);
  s.dp_bucket_parameters_per_rank = m.optional_double(
      "dp_bucket_parameters_per_rank", d.dp_bucket_parameters_per_rank, Range::non_negative);
  s.grad_reduce_bytes =
      m.optional_double("grad_reduce_bytes", d.grad_reduce_bytes, Range::positive);
  s.zero_reduce_bytes =
      m.optional_double("zero_reduce_bytes", d.zero_reduce_bytes, Range::non_negative);
  s.grad_buffer_bytes =
      m.optional_double("grad_buffer_bytes", d.grad_buffer_bytes, Range::positive);
  s.grad_accumulation = static_cast<GradAccumulation>(m.optional_choice(
      "grad_accumulation", kAccumulationNames, static_cast<int>(d.grad_accumulation)));
  // Left out: the file's own grad_accumulation (not the base's split value).
  s.grad_accumulation_without_pp = static_cast<GradAccumulation>(m.optional_choice(
      "grad_accumulation_without_pp", kAccumulationNames,
      static_cast<int>(m.has("grad_accumulation") ? s.grad_accumulation
                                                  : d.grad_accumulation_without_pp)));
  s.zeroes_grad_buffer = m.optional_bool("zeroes_grad_buffer", d.zeroes_grad_buffer);
  s.grad_nan_check = m.optional_bool("grad_nan_check", d.grad_nan_check);
  s.grad_prescale = m.optional_bool("grad_prescale", d.grad_prescale);
  s.zero_stages = read_zero_list(m, "zero_stages", d.zero_stages);
  // ZeRO with PP, unless listed: the base's stages with PP among the file's zero_stages;
  // without a base, the stages 0/1 it lists.
  const unsigned with_pp_default =
      s.zero_stages & (base != nullptr ? d.zero_stages_with_pp : 0b0011u);
  // A default that leaves no stage with PP where the base had some (or, without a base, no
  // stage 0 or 1) would drop pipeline parallelism unsaid: the file says so itself
  // (zero_stages_with_pp: []) or lists the stages that run with PP.
  const bool base_pipelines = base == nullptr || d.zero_stages_with_pp != 0;
  if (m.has("zero_stages") && !m.has("zero_stages_with_pp") && s.zero_stages != 0 &&
      with_pp_default == 0 && base_pipelines) {
    const std::string stage =
        base != nullptr
            ? "a stage among them that base " + d.name + " runs with pipeline parallelism (" +
                  zero_list_text(d.zero_stages_with_pp) + ")"
            : "0 or 1 among them (a stage that runs with pipeline parallelism)";
    m.fail("zero_stages", "expected " + stage +
                              ", or zero_stages_with_pp beside it (the stages that run with PP; [] "
                              "for none)");
  }
  s.zero_stages_with_pp = read_zero_list(m, "zero_stages_with_pp", with_pp_default);
  s.prefetch_units =
      static_cast<int>(m.optional_int("prefetch_units", d.prefetch_units, Range::non_negative));
  s.backward_prefetch = static_cast<BackwardPrefetch>(m.optional_choice(
      "backward_prefetch", kPrefetchNames, static_cast<int>(d.backward_prefetch)));
  s.fp16_grads_in_fp16 = m.optional_bool("fp16_grads_in_fp16", d.fp16_grads_in_fp16);
  s.reshard_after_forward = m.optional_bool("reshard_after_forward", d.reshard_after_forward);
  s.reduce_every_micro_batch =
      m.optional_bool("reduce_every_micro_batch", d.reduce_every_micro_batch);
  s.reduce_scatter_copy_in = m.optional_bool("reduce_scatter_copy_in", d.reduce_scatter_copy_in);
  s.zero3_gather_copy_out = m.optional_bool("zero3_gather_copy_out", d.zero3_gather_copy_out);
  s.zero3_gradient_cat = m.optional_bool("zero3_gradient_cat", d.zero3_gradient_cat);
  s.pp_keeps_gathered_weights =
      m.optional_bool("pp_keeps_gathered_weights", d.pp_keeps_gathered_weights);
  s.pp_bulk_reduce_scatter = m.optional_bool("pp_bulk_reduce_scatter", d.pp_bulk_reduce_scatter);
  s.edge_unit = static_cast<EdgeUnit>(
      m.optional_choice("edge_unit", kEdgeUnitNames, static_cast<int>(d.edge_unit)));
  s.zero3_side_stream_pools = m.optional_bool("zero3_side_stream_pools", d.zero3_side_stream_pools);
  s.zero1_all_reduces_gradients =
      m.optional_bool("zero1_all_reduces_gradients", d.zero1_all_reduces_gradients);
  s.pp_keeps_last_reduce_scatter_input =
      m.optional_bool("pp_keeps_last_reduce_scatter_input", d.pp_keeps_last_reduce_scatter_input);
  s.zero2_per_unit = m.optional_bool("zero2_per_unit", d.zero2_per_unit);
  s.hybrid_shard = m.optional_bool("hybrid_shard", d.hybrid_shard);
  s.tp_pp_dp_order = m.optional_bool("tp_pp_dp_order", d.tp_pp_dp_order);
  s.zero0_one_dimensional = m.optional_bool("zero0_one_dimensional", d.zero0_one_dimensional);
  s.sequence_parallel = m.optional_bool("sequence_parallel", d.sequence_parallel);
  s.sequence_parallel_required =
      m.optional_bool("sequence_parallel_required", d.sequence_parallel_required);
  if (s.sequence_parallel_required && !s.sequence_parallel) {
    if (m.has("sequence_parallel_required")) {
      m.fail("sequence_parallel_required", "true needs sequence_parallel: true");
    }
    m.fail("sequence_parallel",
           "false, but the base stack requires sequence parallelism (set "
           "sequence_parallel_required: false too)");
  }
  s.interleaved_pipeline = m.optional_bool("interleaved_pipeline", d.interleaved_pipeline);
  check_separate_send_recv(m, s);
  s.uneven_stages = m.optional_bool("uneven_stages", d.uneven_stages);
  s.uneven_stages_ends_only = m.optional_bool("uneven_stages_ends_only", d.uneven_stages_ends_only);
  // A file that turns uneven stages off turns the base's end stages off with them.
  s.stage_ends_pinned =
      m.optional_bool("stage_ends_pinned", d.stage_ends_pinned && s.uneven_stages);
  if (s.stage_ends_pinned && !s.uneven_stages) {
    m.fail("stage_ends_pinned", "true needs uneven_stages: true (lighter ends are uneven)");
  }
  s.recompute_modes = read_name_list(m, "recompute", kRecomputeNames, d.recompute_modes, false);
  s.fp8_recipes = read_name_list(m, "fp8_recipes", fp8_recipe_names(), d.fp8_recipes, true);
  s.cudnn_blackwell_heads = read_name_list(m, "cudnn_blackwell_heads", blackwell_head_names(),
                                           d.cudnn_blackwell_heads, true);
  s.unfused_softmax = static_cast<UnfusedSoftmax>(m.optional_choice(
      "unfused_softmax", kUnfusedSoftmaxNames, static_cast<int>(d.unfused_softmax)));
  s.dtypes = read_name_list(m, "dtypes", dtype_names(), d.dtypes, false);
  s.zero_clones_fp32_partition =
      m.optional_bool("zero_clones_fp32_partition", d.zero_clones_fp32_partition);
  s.fp8_weight_cache = m.optional_bool("fp8_weight_cache", d.fp8_weight_cache);
  s.fp8_saves_fp8_inputs = m.optional_bool("fp8_saves_fp8_inputs", d.fp8_saves_fp8_inputs);
  s.fp8_tn_only = m.optional_bool("fp8_tn_only", d.fp8_tn_only);
  s.fp8_current_amax_over_tp =
      m.optional_bool("fp8_current_amax_over_tp", d.fp8_current_amax_over_tp);
  s.elementwise.rmsnorm =
      m.optional_double("rmsnorm_bytes_per_element", d.elementwise.rmsnorm, Range::positive);
  s.elementwise.rope =
      m.optional_double("rope_bytes_per_element", d.elementwise.rope, Range::positive);
  s.elementwise.mla_rope =
      m.optional_double("mla_rope_bytes_per_element", d.elementwise.mla_rope, Range::positive);
  s.elementwise.glu =
      m.optional_double("glu_bytes_per_element", d.elementwise.glu, Range::positive);
  s.elementwise.gqa_repeat_kv = m.optional_bool("gqa_repeat_kv", d.elementwise.gqa_repeat_kv);
  s.selective = static_cast<SelectiveKind>(
      m.optional_choice("selective", kSelectiveNames, static_cast<int>(d.selective)));
  s.partial_recompute = static_cast<PartialRecompute>(m.optional_choice(
      "partial_recompute", kPartialRecomputeNames, static_cast<int>(d.partial_recompute)));
  // Partial recompute is full recompute of some layers: set in this file, it needs full.
  if (m.has("partial_recompute") && s.partial_recompute != PartialRecompute::none &&
      (s.recompute_modes & (1u << static_cast<unsigned>(Recompute::full))) == 0) {
    m.fail("partial_recompute",
           "partial recompute needs full in the stack's recompute list; add full there or set "
           "partial_recompute: none");
  }
  s.kernel_launch_us =
      m.optional_double("kernel_launch_us", d.kernel_launch_us, Range::non_negative);
  s.kernels_per_layer_forward = m.optional_double("kernels_per_layer_forward",
                                                  d.kernels_per_layer_forward, Range::non_negative);
  s.adam_state_bytes = m.optional_double("adam_state_bytes", d.adam_state_bytes, Range::positive);
  s.adam_step_bytes = m.optional_double("adam_step_bytes", d.adam_step_bytes, Range::positive);
  s.zero3_fp32_shard_only = m.optional_bool("zero3_fp32_shard_only", d.zero3_fp32_shard_only);
  s.loss_bytes_per_logit =
      m.optional_double("loss_bytes_per_logit", d.loss_bytes_per_logit, Range::positive);
  s.loss_parallel_bytes_per_logit = m.optional_double(
      "loss_parallel_bytes_per_logit", d.loss_parallel_bytes_per_logit, Range::non_negative);
  s.loss_forward_bytes_per_logit = m.optional_double(
      "loss_forward_bytes_per_logit", d.loss_forward_bytes_per_logit, Range::positive);
  s.loss_backward_bytes_per_logit = m.optional_double(
      "loss_backward_bytes_per_logit", d.loss_backward_bytes_per_logit, Range::positive);
  s.tp_keeps_gathered_inputs =
      m.optional_bool("tp_keeps_gathered_inputs", d.tp_keeps_gathered_inputs);
  s.measured_error = m.optional_double("measured_error", d.measured_error, Range::positive);
  s.measured_error_moe =
      m.optional_double("measured_error_moe", d.measured_error_moe, Range::positive);
  // A band of +/-100% puts the low end at 0 and ties every plan with the leader.
  for (const auto& [key, value] : {std::pair{"measured_error", s.measured_error},
                                   std::pair{"measured_error_moe", s.measured_error_moe}}) {
    if (value >= 1.0 && m.has(key)) m.fail(key, "expected a number in (0, 1)");
  }
  s.cp_kinds = read_name_list(m, "context_parallel", kCpKindNames, d.cp_kinds, true);
  s.expert_parallel = m.optional_bool("expert_parallel", d.expert_parallel);
  s.ep_overlap = m.optional_bool("ep_overlap", d.ep_overlap);
  s.ep_overlap_delay_wgrad = m.optional_bool("ep_overlap_delay_wgrad", d.ep_overlap_delay_wgrad);
  s.moe_shared_expert_overlap =
      m.optional_bool("moe_shared_expert_overlap", d.moe_shared_expert_overlap);
  s.defer_output_wgrad = m.optional_bool("defer_output_wgrad", d.defer_output_wgrad);
  // The limit comes with the switch: a file that sets the switch without a limit gets
  // Megatron-Core's 0 (every call), not a base's limit it may have turned off.
  const int limit_default = m.has("defer_output_wgrad") ? 0 : d.output_wgrad_deferral_limit;
  s.output_wgrad_deferral_limit = static_cast<int>(
      m.optional_int("output_wgrad_deferral_limit", limit_default, Range::non_negative));
  // Megatron-Core: "this argument is invalid if `defer_embedding_wgrad_compute` is False".
  if (m.has("output_wgrad_deferral_limit") && !s.defer_output_wgrad) {
    m.fail("output_wgrad_deferral_limit", "needs defer_output_wgrad: true");
  }
  if (s.output_wgrad_deferral_limit > kMaxOutputWgradDeferralLimit) {
    m.fail("output_wgrad_deferral_limit",
           fmt::format("expected at most {} (0 defers every call)", kMaxOutputWgradDeferralLimit));
  }
  s.moe_permute_fusion = m.optional_bool("moe_permute_fusion", d.moe_permute_fusion);
  s.moe_fp8_padding_copies = m.optional_bool("moe_fp8_padding_copies", d.moe_fp8_padding_copies);
  s.moe_dispatcher = static_cast<MoeDispatcher>(
      m.optional_choice("moe_dispatcher", kMoeDispatcherNames, static_cast<int>(d.moe_dispatcher)));
  s.fp8_param_gather_needs_dp_shard =
      m.optional_bool("fp8_param_gather_needs_dp_shard", d.fp8_param_gather_needs_dp_shard);
  s.fp8_params_need_sharded_optimizer =
      m.optional_bool("fp8_params_need_sharded_optimizer", d.fp8_params_need_sharded_optimizer);
  s.sharded_optimizer_adam_only =
      m.optional_bool("sharded_optimizer_adam_only", d.sharded_optimizer_adam_only);
  // Megatron-Core asserts both (transformer_config.py L3040-3041, L3074-3077 @d98e8a64).
  if (s.ep_overlap && s.moe_shared_expert_overlap) {
    m.fail(m.has("ep_overlap") ? "ep_overlap" : "moe_shared_expert_overlap",
           "ep_overlap and moe_shared_expert_overlap cannot both be true (Megatron-Core refuses "
           "the pair)");
  }
  if (s.ep_overlap_delay_wgrad && !s.ep_overlap) {
    m.fail(m.has("ep_overlap_delay_wgrad") ? "ep_overlap_delay_wgrad" : "ep_overlap",
           "ep_overlap_delay_wgrad needs ep_overlap: true");
  }
  // The combined 1F1B overlaps expert-parallel all-to-alls: none without expert parallelism.
  if (s.ep_overlap && !s.expert_parallel) {
    m.fail(m.has("ep_overlap") ? "ep_overlap" : "expert_parallel",
           "ep_overlap needs expert_parallel: true (it overlaps the EP all-to-alls)");
  }
  check_runtime_keys(m, s);
  if (s.prefetch_units > 64) m.fail("prefetch_units", "expected at most 64");
  // Bytes of one gradient element: a dtype's width, nothing between (3 read as "16-bit").
  if (s.grad_reduce_bytes != 2 && s.grad_reduce_bytes != 4) {
    m.fail("grad_reduce_bytes", "expected 2 (bf16) or 4 (fp32)");
  }
  if (s.zero_reduce_bytes != 0 && s.zero_reduce_bytes != 2 && s.zero_reduce_bytes != 4) {
    m.fail("zero_reduce_bytes", "expected 0 (as grad_reduce_bytes), 2 (16-bit) or 4 (fp32)");
  }
  if (s.grad_buffer_bytes != 2 && s.grad_buffer_bytes != 4) {
    m.fail("grad_buffer_bytes", "expected 2 (bf16) or 4 (fp32)");
  }
  if (s.adam_state_bytes > 16) m.fail("adam_state_bytes", "expected at most 16");
  if (s.adam_step_bytes > 256) m.fail("adam_step_bytes", "expected at most 256");
  if (s.loss_bytes_per_logit > 64) m.fail("loss_bytes_per_logit", "expected at most 64");
  if (s.loss_parallel_bytes_per_logit > 64) {
    m.fail("loss_parallel_bytes_per_logit", "expected at most 64");
  }
  if (s.loss_forward_bytes_per_logit > 64) {
    m.fail("loss_forward_bytes_per_logit", "expected at most 64");
  }
  if (s.loss_backward_bytes_per_logit > 64) {
    m.fail("loss_backward_bytes_per_logit", "expected at most 64");
  }
  // Bytes an elementwise op moves per element: op-by-op fp32 chains reach about 40 (fms-fsdp's
  // RMSNorm 36); 256 is the same ceiling as adam_step_bytes.
  const std::pair<const char*, double> per_element[] = {
      {"rmsnorm_bytes_per_element", s.elementwise.rmsnorm},
      {"rope_bytes_per_element", s.elementwise.rope},
      {"mla_rope_bytes_per_element", s.elementwise.mla_rope},
      {"glu_bytes_per_element", s.elementwise.glu}};
  for (const auto& [key, bytes] : per_element) {
    if (bytes > 256) m.fail(key, "expected at most 256");
  }
  // A gradient bucket of at least one parameter and at most 10^18 (DeepSpeed's
  // reduce_bucket_size default is 5 x 10^8, Megatron's 4 x 10^7; megatron-2021's one bucket
  // for everything is written 10^15).
  if (s.dp_bucket_parameters < 1 || s.dp_bucket_parameters > 1e18) {
    m.fail("dp_bucket_parameters", "expected 1 to 1e18 parameters");
  }
  if (s.dp_bucket_parameters_per_rank > 1e18) {
    m.fail("dp_bucket_parameters_per_rank", "expected at most 1e18 parameters");
  }
  if (s.kernel_launch_us > 1000) m.fail("kernel_launch_us", "expected at most 1000 us");
  if (s.kernels_per_layer_forward > 10000)
    m.fail("kernels_per_layer_forward", "expected at most 10000");
  // The NaN check and the 1/DP scaling are passes over Megatron's main-grad buffer: a stack
  // whose data parallelism keeps none (FSDP, torchtitan, DeepSpeed) cannot run them.
  if (!s.zeroes_grad_buffer && (s.grad_nan_check || s.grad_prescale)) {
    const bool prescale_here = s.grad_prescale && m.has("grad_prescale");
    const bool check_here = s.grad_nan_check && m.has("grad_nan_check");
    if (prescale_here || check_here) {
      m.fail(prescale_here ? "grad_prescale" : "grad_nan_check",
             "expected false: the stack keeps no main-grad buffer (zeroes_grad_buffer false) to "
             "check or scale");
    }
    m.fail("zeroes_grad_buffer",
           "expected true: grad_nan_check and grad_prescale pass over a main-grad buffer; set "
           "them false too");
  }
  if ((s.zero_stages_with_pp & ~s.zero_stages) != 0) {
    m.fail("zero_stages_with_pp", "expected a subset of zero_stages");
  }
  if (s.zero_stages == 0) m.fail("zero_stages", "expected at least one ZeRO stage");
  // A stack that lists fp8 among its dtypes runs some FP8 recipe, and one that lists recipes
  // runs fp8.
  if (m.has("dtypes") && s.runs_dtype(Dtype::fp8) && s.fp8_recipes == 0) {
    m.fail("dtypes", "fp8 is listed, but fp8_recipes is empty: list a recipe or drop fp8");
  }
  if (!s.runs_dtype(Dtype::fp8) && s.fp8_recipes != 0 && m.has("fp8_recipes")) {
    m.fail("fp8_recipes", "recipes listed, but dtypes has no fp8: add fp8 or leave them out");
  }
  // Interleaving splits pipeline stages: a stack without pipelines has none to split.
  if (s.interleaved_pipeline && !s.pipelines() && m.has("interleaved_pipeline")) {
    m.fail("interleaved_pipeline",
           "true, but the stack has no pipeline parallelism (zero_stages_with_pp is empty)");
  }
  return s;
}

}  // namespace

namespace {

/// `chain`: the files read so far (their identities), the including one last (cycle and depth
/// checks).
Stack load_stack_chained(const std::string& text, const std::string& source,
                         const StackFileReader& reader, std::vector<std::string>& chain) {
  const YAML::Node root = yaml::parse(text, source);
  const MapReader m(root, source, "", yaml::line_of(root, 1));
  if (!m.has("base")) return read_stack(m, nullptr);
  // `base:`: the file says only what differs from a built-in stack or another stack file.
  const std::string name = m.required_string("base");
  const std::string where = yaml::position(m.source(), m.line("base"), m.path("base"));
  const std::optional<StackText> file = reader ? reader(name, source, where) : std::nullopt;
  if (file) {
    const std::string& identity = file->identity.empty() ? file->source : file->identity;
    for (const std::string& seen : chain) {
      if (seen == identity) {
        throw InputError(
            fmt::format("{}: '{}' is already in the chain of bases (a cycle)", where, name));
      }
    }
    if (static_cast<int>(chain.size()) >= kMaxStackBaseFiles) {
      throw InputError(
          fmt::format("{}: more than {} stack files chained by base:; expected a shorter chain",
                      where, kMaxStackBaseFiles));
    }
    chain.push_back(identity);
    const Stack base = load_stack_chained(file->text, file->source, reader, chain);
    return read_stack(m, &base);
  }
  if (!preset_text(PresetKind::stack, name)) unknown_preset(PresetKind::stack, name, where + ": ");
  const Stack base = stack_preset(name);
  return read_stack(m, &base);
}

}  // namespace

Stack load_stack(const std::string& text, const std::string& source, const StackFileReader& reader,
                 const std::string& identity) {
  std::vector<std::string> chain{identity.empty() ? source : identity};
  return load_stack_chained(text, source, reader, chain);
}

Stack stack_preset(const std::string& name) {
  const auto text = preset_text(PresetKind::stack, name);
  if (!text) unknown_preset(PresetKind::stack, name);
  Stack stack = load_stack(std::string(*text), preset_source(PresetKind::stack, name));
  // Built in: the user has no file to look at; the preset's name says where (trident presets).
  stack.attention_from = "stack " + name + ": attention";
  return stack;
}

}  // namespace trident
