#pragma once
/// The transformer to train and how: what a model preset (configs/models/*.yaml) describes.
#include <optional>
#include <string>
#include <vector>

#include "topology/errors.h"
#include "topology/gpu.h"

namespace trident {

enum class FfnKind { gelu, relu, relu2, swiglu, geglu };
enum class NormKind { layernorm, rmsnorm };
enum class Optimizer { adam, sgd };
/// Multi-head (grouped-query) attention, or DeepSeek's multi-head latent attention (low-rank
/// compressed Q and KV, decoupled RoPE dims; DeepSeek-V2/V3 reports §2.1).
enum class AttentionKind { mha, mla };
/// How an FP8 run scales its 8-bit tensors (Transformer Engine recipes): delayed (scale from
/// the amax history of earlier steps, TE's DelayedScaling), current (per-tensor amax of this
/// tensor first, TE Float8CurrentScaling / torchao tensorwise), blockwise (per-block fp32
/// scales, 1x128 and 128x128: TE Float8BlockScaling, DeepSeek-V3's recipe; torchao rowwise),
/// mxfp8 (one E8M0 scale per 32 consecutive elements, Blackwell's block-scaled tensor cores:
/// TE MXFP8BlockScaling).
enum class Fp8Recipe { delayed, current, blockwise, mxfp8 };
/// Every FP8 recipe, in the order of the enum (and of the model file's names).
inline constexpr Fp8Recipe kFp8Recipes[] = {Fp8Recipe::delayed, Fp8Recipe::current,
                                            Fp8Recipe::blockwise, Fp8Recipe::mxfp8};
/// The recipes' names as model and stack files spell them, in the order of kFp8Recipes.
[[nodiscard]] const std::vector<std::string>& fp8_recipe_names();
/// Block-scaled recipes keep a rowwise and a columnwise copy of each quantized tensor, each
/// with its own block scales (a block runs along the GEMM's k, so the copy for the other GEMM
/// cannot be a transpose of the first).
[[nodiscard]] bool is_block_scaled(Fp8Recipe recipe);

/// Gated FFNs (swiglu, geglu) have three matrices (gate, up, down); the others two.
[[nodiscard]] bool is_gated(FfnKind kind);
[[nodiscard]] const char* to_string(FfnKind kind);
[[nodiscard]] const char* to_string(NormKind kind);
[[nodiscard]] const char* to_string(Optimizer optimizer);
[[nodiscard]] const char* to_string(Fp8Recipe recipe);

/// Most sequences a step may have (2^24): a micro-batch, a divisor of the batch, stays an int
/// and enumerating the batch's divisors stays instant (2^63-1 took hours; 2^31 wrapped).
inline constexpr long long kMaxGlobalBatch = 1LL << 24;
/// Largest multi-token-prediction depth a model file may ask for (DeepSeek-V3 uses 1).
inline constexpr int kMaxMtpLayers = 16;
/// Largest MLA rank or head dim accepted (DeepSeek-V3: 1536, 512, 128, 64, 128); their sums are
/// ints, so each stays far below INT_MAX / 2.
inline constexpr int kMaxMlaDim = 1 << 20;
/// The widest attention a model file's head_dim may give (heads x head_dim), so Q, K and V's
/// widths stay ints.
inline constexpr long long kMaxQHidden = 1LL << 30;

/// Which tensors of an FP8 run are 8-bit (the model file's training.fp8). The linear layers'
/// GEMMs always are, and so are the TP all-gathers of what feeds them (the frameworks cast
/// before they gather); attention's batched GEMMs and the ZeRO-3 weights only when asked.
struct Fp8Options {
  Fp8Recipe recipe = Fp8Recipe::delayed;  ///< Transformer Engine's default recipe
  bool attention = false;                 ///< FP8 fused attention (cuDNN FP8 / FA3 FP8)
  /// TP all-gathers in FP8: Transformer Engine gathers the FP8-cast norm output and output
  /// gradient (layernorm_linear.py, base.py grad_output_preprocess), userbuffers included;
  /// false prices 16-bit gathers.
  bool communication = true;
  bool params = false;  ///< FP8 weights only, gathered in FP8 (Megatron --fp8-param-gather)
};

struct Training {
  long long global_batch = 0;  ///< sequences per step; 0 = not given (must come from a flag)
  Dtype dtype = Dtype::bf16;
  /// Where the model file set `dtype` ("FILE:LINE: training.dtype", "model NAME:
  /// training.dtype" for a preset); empty when not set (bf16 by default) or overridden.
  std::string dtype_from;
  /// Where the model file set the FP8 recipe, or left it to the default ("FILE:LINE:
  /// training.fp8.recipe", else training.fp8's or training.dtype's place); empty when the
  /// file says nothing of FP8 or the dtype came from a flag.
  std::string fp8_recipe_from;
  /// Where the model file set training.fp8.attention ("FILE:LINE: training.fp8.attention");
  /// empty when it did not.
  std::string fp8_attention_from;
  Optimizer optimizer = Optimizer::adam;
  Fp8Options fp8;  ///< read only when dtype is fp8
};

enum class MoeRouter { softmax, sigmoid };

/// Mixture of experts (the model file's `moe:` mapping). experts == 0: a dense model.
struct MoeSpec {
  int experts = 0;            ///< routed experts per MoE layer
  int top_k = 0;              ///< routed experts per token
  int expert_ffn_hidden = 0;  ///< FFN hidden size of one routed (and shared) expert
  int shared_experts = 0;     ///< always-active experts of the same size (DeepSeek: 1)
  int layer_freq = 1;         ///< every N-th layer is MoE (Megatron --moe-layer-freq N)
  int first_dense = 0;        ///< the first K layers stay dense (DeepSeek first_k_dense_replace)
  /// Explicit MoE layer indices (0-based, distinct: find_model_problem; ascending: the loader
  /// sorts them, and is_moe_layer / moe_layers_in search them by bisection); overrides the above.
  std::vector<int> layer_list;
  double capacity_factor = 0.0;  ///< tokens per expert capped at this x the mean; 0 = dropless
  /// Busiest expert-parallel rank's tokens over the mean (dropless). 1.0 = perfect balance:
  /// unsourced, a lower bound (docs/cost_model.md#moe).
  double imbalance = 1.0;
  /// The router's score function (the model file's `router`): softmax over the experts
  /// (Megatron's default) or DeepSeek-V3's sigmoid. Not priced (the router GEMM is the same);
  /// --emit megatron writes it.
  MoeRouter router = MoeRouter::softmax;
};

/// Multi-head latent attention dimensions (DeepSeek-V3 config.json).
struct MlaSpec {
  int q_lora_rank = 0;  ///< 0: Q projected directly (DeepSeek-V2-Lite)
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct Model {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  ///< fewer than heads: grouped-query attention
  /// The model file's `head_dim` (Hugging Face config `head_dim`, Megatron --kv-channels):
  /// the width of one attention head where it is not hidden / heads (Qwen3: 64 heads of 128 in
  /// a hidden of 4096). 0: hidden / heads.
  int explicit_head_dim = 0;
  int ffn_hidden = 0;
  FfnKind ffn = FfnKind::gelu;
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = false;
  NormKind norm = NormKind::layernorm;
  bool bias = true;               ///< linear layers carry biases (GPT-3: yes, Llama: no)
  bool learned_positions = true;  ///< learned absolute position embeddings (seq_len x hidden)
  /// RoPE's base frequency (theta) for a model without learned positions: what a launch
  /// configuration writes (Megatron-LM's --rotary-base defaults to 10000, Llama 3 trains with
  /// 500000); no time or memory depends on it.
  long long rope_base = 10000;
  /// A per-head norm of Q and K (Qwen3's q_norm/k_norm): written to a launch configuration
  /// (--qk-layernorm); its weights and elementwise pass are not priced.
  bool qk_layernorm = false;
  AttentionKind attention = AttentionKind::mha;
  MlaSpec mla;  ///< when attention == mla
  MoeSpec moe;  ///< experts == 0: dense
  /// Hidden and attention dropout probability; 0 = no dropout layers, so no masks are kept.
  /// The loader's default: 0.1 with learned positions (GPT-2/3, Megatron-LM's hidden_dropout
  /// and attention_dropout defaults), 0 otherwise (Llama, MPT, BLOOM, GPT-NeoX ship without).
  double dropout = 0.0;
  /// Multi-token prediction depth (DeepSeek-V3 D = 1; Megatron-Core --mtp-num-layers): each
  /// module is one more transformer layer, a 2h -> h projection and another pass through the
  /// shared output head and its loss, all on the last pipeline stage. 0 = none.
  int mtp_layers = 0;
  Training training;

  [[nodiscard]] int head_dim() const {
    return explicit_head_dim > 0 ? explicit_head_dim : hidden / heads;
  }
  [[nodiscard]] int kv_hidden() const { return kv_heads * head_dim(); }
  /// Width of Q and of the attention context that enters the output projection: heads x
  /// head_dim, which is hidden unless the model sets head_dim.
  [[nodiscard]] int q_hidden() const { return heads * head_dim(); }
  /// Per-head dims of Q/K (scores) and V (context): head_dim for MHA; MLA's nope + rope, v.
  [[nodiscard]] int qk_head_dim() const {
    return attention == AttentionKind::mla ? mla.qk_nope_head_dim + mla.qk_rope_head_dim
                                           : head_dim();
  }
  [[nodiscard]] int v_head_dim() const {
    return attention == AttentionKind::mla ? mla.v_head_dim : head_dim();
  }
  [[nodiscard]] bool is_moe() const { return moe.experts > 0; }
  /// Whether layer `index` (0-based) is a MoE layer.
  [[nodiscard]] bool is_moe_layer(int index) const;
  /// MoE layers in the model (0 when dense).
  [[nodiscard]] int moe_layers() const;
  /// MoE layers among layers [begin, end) (clamped to the model's).
  [[nodiscard]] int moe_layers_in(int begin, int end) const;
  /// Where a training key was set, for an error: `from` ("FILE:LINE: training.fp8.recipe") when
  /// the model file set it, else "model NAME: KEY".
  [[nodiscard]] std::string key_where(const std::string& from, const std::string& key) const {
    return from.empty() ? "model " + name + ": " + key : from;
  }
};

/// Exact parameter counts, in parameters.
struct ParameterCount {
  double embedding = 0.0;  ///< token (vocab x hidden) + learned positions
  double per_layer = 0.0;  ///< one transformer layer, norms included
  double attention_per_layer = 0.0;
  double ffn_per_layer = 0.0;
  double norms_per_layer = 0.0;
  double final_norm = 0.0;
  double output_layer = 0.0;  ///< 0 when tied to the embedding
  /// MoE: every routed expert of every MoE layer (sharded over expert parallelism); not in
  /// per_layer. ffn_per_layer then averages the dense FFNs, shared experts and routers.
  double routed_experts = 0.0;
  double per_expert = 0.0;  ///< one routed expert (gated: 3 x h x f_e)
  double total = 0.0;
  /// Parameters one token passes through: routed experts counted top_k of experts.
  double active = 0.0;
};

[[nodiscard]] ParameterCount count_parameters(const Model& model);
/// One routed expert's parameters (ParameterCount::per_expert; 0 for a dense model): an FFN of
/// the experts' width.
[[nodiscard]] double routed_expert_parameters(const Model& model);

[[nodiscard]] const char* to_string(AttentionKind kind);

/// The first reason the model is impossible, keyed by its YAML key ("kv_heads"), or nullopt.
[[nodiscard]] std::optional<Problem> find_model_problem(const Model& model);

/// Throws InputError "SOURCE: KEY: MESSAGE" for find_model_problem's finding.
/// Throws InputError naming `source` when the model is impossible (kv_heads not dividing
/// heads, hidden not divisible by heads, zero layers...).
void check_model(const Model& model, const std::string& source);

}  // namespace trident
