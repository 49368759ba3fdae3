// planner/export: every --emit release either writes a configuration whose every flag/key is
// in that release's own argument definitions (tests/data/emit, scripts/emit-argdefs) and that
// obeys the framework's cross-flag rules (re-stated below with their source lines), or
// refuses with the nearest plan it can run (the refusal as data; cli/emit_text.h words it).
#include <algorithm>
#include <catch2/catch.hpp>
#include <tuple>

#include "costmodel/stack.h"
#include "planner/export.h"
#include "tests/emit_framework_rules.h"

using namespace trident;
using namespace trident::test;

namespace {

/// What the plan's GPUs or model are, not a knob of the split, stand in the way of.
bool no_knob_fixes(RefusalKind kind) {
  return kind == RefusalKind::uneven_ranks || kind == RefusalKind::moe_model ||
         kind == RefusalKind::dtype || kind == RefusalKind::ffn ||
         kind == RefusalKind::model_shape || kind == RefusalKind::uneven_stages ||
         kind == RefusalKind::mtp_layers || kind == RefusalKind::mtp_positions ||
         kind == RefusalKind::fp8_recipe || kind == RefusalKind::fp8_attention ||
         kind == RefusalKind::ep_overlap || kind == RefusalKind::moe_dispatcher ||
         kind == RefusalKind::qk_norm || kind == RefusalKind::sgd;
}

Cluster cluster_of(int servers) {
  Cluster cluster;
  cluster.name = "test-dgx";
  cluster.servers = servers;
  cluster.gpus_per_server = 8;
  cluster.nvlink.domain_gpus = 8;
  return cluster;
}

/// `servers` servers of one GPU each: any rank count fills whole servers.
Cluster cluster_of_singles(int servers) {
  Cluster cluster = cluster_of(servers);
  cluster.gpus_per_server = 1;
  cluster.nvlink.domain_gpus = 1;
  return cluster;
}

/// Llama 3 8B's shape (torchtitan's "8B" flavor): SwiGLU, RMSNorm, RoPE, no biases, untied.
Model llama8b() {
  Model m;
  m.name = "llama3-8b";
  m.layers = 32;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 14336;
  m.ffn = FfnKind::swiglu;
  m.vocab = 128256;
  m.seq_len = 8192;
  m.norm = NormKind::rmsnorm;
  m.bias = false;
  m.learned_positions = false;
  m.rope_base = 500000;  // configs/models/llama3-8b.yaml, torchtitan's flavors
  m.training.global_batch = 256;
  return m;
}

}  // namespace

namespace {

struct Split {
  int tp, pp, vp;
};

ParallelConfig config_of(Split split, int zero, Recompute recompute, bool sp) {
  ParallelConfig c;
  c.tp = split.tp;
  c.pp = split.pp;
  c.dp = 32 / (split.tp * split.pp);
  c.virtual_stages = split.vp;
  c.zero = zero;
  c.recompute = recompute;
  c.sequence_parallel = sp;
  return c;
}

/// One replica of a pipeline: TP 1, DP 1, `pp` stages of `vp` chunks each.
ParallelConfig one_pipeline(int pp, int vp = 1) {
  ParallelConfig c;
  c.tp = 1;
  c.pp = pp;
  c.dp = 1;
  c.virtual_stages = vp;
  return c;
}

/// A GPT-style model torchtitan has no flavor for: GeLU, LayerNorm, learned positions,
/// biases, tied embeddings.
Model gpt_style() {
  Model m = llama8b();
  m.name = "gpt-style";
  m.ffn = FfnKind::gelu;
  m.norm = NormKind::layernorm;
  m.learned_positions = true;
  m.bias = true;
  m.tied_embeddings = true;
  return m;
}

/// Emits or refuses; a refusal names the nearest plan, which emits and passes, or what to
/// change instead (cli/emit_text.h words it; test_cli_text checks the words).
void check_one(const Release& r, const Cluster& cluster, const Model& m, const ParallelConfig& c,
               int& emitted, int& refused, const StackSwitches& switches = {}) {
  const Export e = export_plan(r, cluster, m, c, SelectiveKind::attention, CpKind::p2p, switches);
  INFO(release_id(r) << " " << m.name << " tp" << c.tp << " pp" << c.pp << " vp" << c.virtual_stages
                     << " zero" << c.zero << " " << to_string(c.recompute) << " sp"
                     << c.sequence_parallel);
  if (!e.refusal) {
    ++emitted;
    CHECK(rules(r, e.text, m, c) == "");
    return;
  }
  ++refused;
  CHECK(e.text.empty());
  CHECK((e.refusal->nearest.has_value() || e.refusal->no_dividing_split ||
         no_knob_fixes(e.refusal->change.kind)));
  if (e.refusal->nearest) {
    // The nearest plan under the same stack: what it runs (attention, reduction) decides too.
    const Export nearest = export_plan(r, cluster, m, *e.refusal->nearest, SelectiveKind::attention,
                                       CpKind::p2p, switches);
    REQUIRE_FALSE(nearest.refusal.has_value());
    CHECK(rules(r, nearest.text, m, *e.refusal->nearest) == "");
  }
}

/// The launch `r` writes for the plan priced with `switches`; it must emit and pass the
/// release's rules.
std::string emitted(const Release& r, const Cluster& cluster, const Model& m,
                    const ParallelConfig& c, const StackSwitches& switches) {
  const Export e = export_plan(r, cluster, m, c, SelectiveKind::attention, CpKind::p2p, switches);
  REQUIRE_FALSE(e.refusal.has_value());
  CHECK(rules(r, e.text, m, c) == "");
  return e.text;
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

const StackSwitches kStackVariants[] = {
    {.pp_overlap = false, .grad_reduce_bytes = 2, .attention = AttentionKernel::flash},
    {.tp_userbuffers = true,
     .dp_overlap_grad_reduce = true,
     .dp_overlap_param_gather = true,
     .grad_reduce_bytes = 4,
     .attention = AttentionKernel::unfused}};

TEST_CASE("every release emits a passing config or refuses with the nearest plan", "[export]") {
  // 32 GPUs on 4 servers; DP = 32 / (TP x PP); global batch 256, micro-batch 1.
  const Cluster cluster = cluster_of(4);
  Model fp8 = llama8b();
  fp8.training.dtype = Dtype::fp8;
  const Split splits[] = {{1, 1, 1}, {2, 1, 1}, {1, 4, 1}, {2, 4, 1}, {2, 4, 2}};
  for (const Release& r : releases()) {
    int emitted = 0, refused = 0;
    for (const Model& m : {llama8b(), fp8, gpt_style()}) {
      for (const Split split : splits) {
        for (int zero = 0; zero <= 3; ++zero) {
          for (const Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
            for (const bool sp : {false, true}) {
              if (sp && split.tp < 2) continue;
              check_one(r, cluster, m, config_of(split, zero, rc, sp), emitted, refused);
              // What other stacks price: exposed interleaved transfers, 16-bit reductions and
              // FlashAttention; userbuffers with both DP overlaps and unfused attention.
              for (const StackSwitches& s : kStackVariants) {
                check_one(r, cluster, m, config_of(split, zero, rc, sp), emitted, refused, s);
              }
              if (rc != Recompute::full) continue;
              // Partial full recompute: 2 layers of each chunk (every k-th for torchtitan).
              ParallelConfig partial = config_of(split, zero, rc, sp);
              partial.recompute_layers = 2;
              check_one(r, cluster, m, partial, emitted, refused);
            }
          }
        }
      }
    }
    INFO(release_id(r));
    CHECK(emitted > 0);  // the matrix exercises the rules for every release
  }
}

TEST_CASE("megatron writes MoE, MLA and MTP as priced, nemo for its recipes; the rest refuse",
          "[export]") {
  // 32 GPUs on 4 servers. A Mixtral-like model (8 experts, top 2, every layer MoE), a
  // DeepSeek-like one (MLA, a shared expert, the first layer dense, sigmoid router, one MTP
  // layer) and a top-1 softmax one, each over EP 1-8, with and without the stack's overlaps.
  const Cluster cluster = cluster_of(4);
  Model mixtral = llama8b();
  mixtral.name = "moe";
  mixtral.moe.experts = 8;
  mixtral.moe.top_k = 2;
  mixtral.moe.expert_ffn_hidden = 14336;
  Model deepseek = mixtral;
  deepseek.name = "mla-moe";
  deepseek.kv_heads = deepseek.heads;
  deepseek.attention = AttentionKind::mla;
  deepseek.mla = {1536, 512, 128, 64, 128};
  deepseek.moe.shared_experts = 1;
  deepseek.moe.first_dense = 1;
  deepseek.moe.router = MoeRouter::sigmoid;
  deepseek.mtp_layers = 1;
  Model top1 = mixtral;
  top1.name = "top1";
  top1.moe.top_k = 1;
  top1.moe.capacity_factor = 1.25;
  const Release& mlm = parse_release("megatron");
  // None; the DP overlaps, the shared experts' and the fused permutation; the DP overlaps and
  // the combined 1F1B.
  const StackSwitches overlaps[] = {{},
                                    {.dp_overlap_grad_reduce = true,
                                     .dp_overlap_param_gather = true,
                                     .shared_expert_overlap = true,
                                     .moe_permute_fusion = true},
                                    {.tp_userbuffers = true,
                                     .dp_overlap_grad_reduce = true,
                                     .dp_overlap_param_gather = true,
                                     .ep_overlap = true,
                                     .delay_wgrad = true}};
  const Release& nemo = parse_release("nemo");
  int emitted = 0, combined = 0, nemo_emitted = 0;
  for (const Model& m : {mixtral, deepseek, top1}) {
    for (const Split split : {Split{1, 1, 1}, Split{2, 1, 1}, Split{2, 2, 1}, Split{1, 2, 2}}) {
      for (const int ep : {1, 2, 8}) {
        for (const Recompute rc : {Recompute::none, Recompute::selective, Recompute::full}) {
          ParallelConfig c = config_of(split, 1, rc, split.tp > 1);
          c.ep = ep;
          for (const StackSwitches& moe : overlaps) {
            const Export e =
                export_plan(mlm, cluster, m, c, SelectiveKind::attention, CpKind::p2p, moe);
            INFO(m.name << " tp" << c.tp << " pp" << c.pp << " vp" << c.virtual_stages << " ep"
                        << ep << " " << to_string(rc) << " overlap " << moe.ep_overlap);
            if (e.refusal) continue;  // an uneven split (MTP) the release cannot write
            ++emitted;
            CHECK(rules(mlm, e.text, m, c) == "");
            // TE's fused permutation exactly where the plan was priced with it.
            CHECK((e.text.find("--moe-permute-fusion") != std::string::npos) ==
                  moe.moe_permute_fusion);
            if (e.text.find("--overlap-moe-expert-parallel-comm") != std::string::npos) ++combined;
          }
          // NeMo writes the models of its recipes (the Mixtral-shaped one is MixtralConfig8x7B);
          // it refuses the rest, and the other targets refuse them all.
          for (const StackSwitches& moe : overlaps) {
            const Export e =
                export_plan(nemo, cluster, m, c, SelectiveKind::attention, CpKind::p2p, moe);
            if (e.refusal) {
              CHECK(no_knob_fixes(e.refusal->change.kind));
              continue;
            }
            ++nemo_emitted;
            CHECK(rules(nemo, e.text, m, c) == "");
            CHECK(e.text.find(std::string("recipe.model.config.moe_permute_fusion = ") +
                              (moe.moe_permute_fusion ? "True" : "False")) != std::string::npos);
          }
          for (const char* other : {"nemo-hydra", "deepspeed", "torchtitan"}) {
            const Export refused = export_plan(parse_release(other), cluster, m, c);
            REQUIRE(refused.refusal.has_value());
            CHECK(no_knob_fixes(refused.refusal->change.kind));
          }
        }
      }
    }
  }
  CHECK(emitted > 100);
  CHECK(combined > 10);
  CHECK(nemo_emitted > 20);
  // The written pattern: DeepSeek-like, 32 layers with the first dense.
  ParallelConfig c = config_of({1, 1, 1}, 1, Recompute::none, false);
  c.ep = 8;
  const Export e = export_plan(mlm, cluster, deepseek, c);
  CHECK(e.text.find("  --moe-layer-freq '([0]*1+[1]*31)' \\\n") != std::string::npos);
  CHECK(e.text.find("  --moe-router-score-function sigmoid \\\n") != std::string::npos);
  // A selective recompute of the MLA up-projections is written as such.
  c.recompute = Recompute::selective;
  const Export up = export_plan(mlm, cluster, deepseek, c, SelectiveKind::mla_up_proj);
  CHECK(up.text.find("--recompute-granularity selective \\\n  --recompute-modules mla_up_proj") !=
        std::string::npos);
}

TEST_CASE("megatron writes the pricing stack's DP overlaps", "[export]") {
  // Megatron-LM's defaults are off; the megatron-core preset prices both on (NeMo's recipes).
  const Cluster cluster = cluster_of(4);
  const Release& mlm = parse_release("megatron");
  const StackSwitches on{.dp_overlap_grad_reduce = true, .dp_overlap_param_gather = true};
  for (int zero = 0; zero <= 3; ++zero) {
    const ParallelConfig c = config_of({2, 1, 1}, zero, Recompute::none, true);
    const Export e =
        export_plan(mlm, cluster, llama8b(), c, SelectiveKind::attention, CpKind::p2p, on);
    REQUIRE_FALSE(e.refusal.has_value());
    INFO("ZeRO-" << zero);
    CHECK(e.text.find("--overlap-grad-reduce") != std::string::npos);
    // The parameter gather only with the distributed optimizer or Megatron-FSDP.
    CHECK((e.text.find("--overlap-param-gather") != std::string::npos) == (zero >= 1));
    CHECK(rules(mlm, e.text, llama8b(), c) == "");
  }
  // No data parallelism: nothing to overlap, nothing written; a stack without them: neither.
  ParallelConfig alone = config_of({8, 4, 1}, 1, Recompute::none, true);
  alone.dp = 1;
  CHECK(export_plan(mlm, cluster, llama8b(), alone, SelectiveKind::attention, CpKind::p2p, on)
            .text.find("--overlap-grad-reduce") == std::string::npos);
  CHECK(export_plan(mlm, cluster, llama8b(), config_of({2, 1, 1}, 1, Recompute::none, true))
            .text.find("--overlap-") == std::string::npos);
  // Userbuffers as priced (megatron-core-perf: TP inside the domain, with SP): --tp-comm-overlap,
  // which Megatron-LM asserts only with sequence parallelism (arguments.py L1401-1402).
  const StackSwitches ub{.tp_userbuffers = true};
  const ParallelConfig sp = config_of({2, 1, 1}, 1, Recompute::none, true);
  const Export with_sp =
      export_plan(mlm, cluster, llama8b(), sp, SelectiveKind::attention, CpKind::p2p, ub);
  CHECK(with_sp.text.find("\n  --tp-comm-overlap") != std::string::npos);
  CHECK(rules(mlm, with_sp.text, llama8b(), sp) == "");
  const ParallelConfig no_sp = config_of({2, 1, 1}, 1, Recompute::none, false);
  CHECK(export_plan(mlm, cluster, llama8b(), no_sp, SelectiveKind::attention, CpKind::p2p, ub)
            .text.find("--tp-comm-overlap") == std::string::npos);
}

TEST_CASE("launches run the pipeline overlap and gradient dtype the plan was priced with",
          "[export]") {
  const Cluster cluster = cluster_of(4);
  const Release& mlm = parse_release("megatron");
  const Release& nemo = parse_release("nemo");
  const Model m = llama8b();  // NeMo's llama3_8b recipe
  auto emit = [&](const Release& r, const ParallelConfig& c, const StackSwitches& s,
                  const Model& model) { return emitted(r, cluster, model, c, s); };
  // A stack that prices the interleaved transfers exposed (megatron-2021, NeMo 2022), on
  // TP2 PP4 VP2: Megatron-LM overlaps them unless told; NeMo only with the callback.
  const StackSwitches exposed{.pp_overlap = false};
  const ParallelConfig pp4 = config_of({2, 4, 2}, 1, Recompute::none, true);
  CHECK(has(emit(mlm, pp4, exposed, m), "\n  --no-overlap-p2p-communication"));
  CHECK_FALSE(has(emit(mlm, pp4, {}, m), "--no-overlap-p2p-communication"));
  CHECK(has(emit(nemo, pp4, exposed, m), "overlap_p2p_comm=False, batch_p2p_comm=True"));
  CHECK(has(emit(nemo, pp4, {}, m), "overlap_p2p_comm=True, batch_p2p_comm=False"));
  // PP 2: Megatron-LM runs the interleaved schedule only overlapped; the launch says so.
  const ParallelConfig pp2 = config_of({2, 2, 2}, 1, Recompute::none, true);
  for (const Release* r : {&mlm, &nemo}) {
    const std::string text = emit(*r, pp2, exposed, m);
    CHECK_FALSE(has(text, "--no-overlap-p2p-communication"));
    CHECK_FALSE(has(text, "overlap_p2p_comm=False"));
    CHECK(has(text, "# the pipeline's transfers overlap compute in this launch"));
  }
  // No interleaving: nothing to switch, nothing said.
  const ParallelConfig plain = config_of({2, 4, 1}, 1, Recompute::none, true);
  CHECK_FALSE(has(emit(mlm, plain, exposed, m), "overlap"));
  CHECK_FALSE(has(emit(nemo, plain, exposed, m), "p2p"));
  // The gradients' reduction: bf16 training reduces in fp32 by default in both releases
  // (Megatron-LM arguments.py L1186-1193; NeMo's bf16_mixed grad_reduce_in_fp32=True); a
  // 16-bit stack (megatron-core-perf) says so. fp16 reduces in fp16 by default.
  const StackSwitches bf16_reduce{.grad_reduce_bytes = 2}, fp32_reduce{.grad_reduce_bytes = 4};
  CHECK(has(emit(mlm, plain, bf16_reduce, m), "\n  --grad-reduce-in-bf16"));
  CHECK_FALSE(has(emit(mlm, plain, fp32_reduce, m), "--grad-reduce-in-bf16"));
  CHECK(
      has(emit(nemo, plain, bf16_reduce, m), "recipe.trainer.plugins.grad_reduce_in_fp32 = False"));
  CHECK_FALSE(has(emit(nemo, plain, fp32_reduce, m), "grad_reduce_in_fp32"));
  Model fp16 = m;
  fp16.training.dtype = Dtype::fp16;
  CHECK(has(emit(mlm, plain, fp32_reduce, fp16), "\n  --accumulate-allreduce-grads-in-fp32"));
  CHECK_FALSE(has(emit(mlm, plain, bf16_reduce, fp16), "grads-in-fp32"));
  CHECK(has(emit(nemo, plain, fp32_reduce, fp16),
            "recipe.trainer.plugins.grad_reduce_in_fp32 = True"));
  // NeMo's callback carries userbuffers as priced (TP > 1 with SP) and the DP overlaps; the
  // launcher keeps one device connection with TP, as Megatron-LM asserts.
  const StackSwitches perf{
      .tp_userbuffers = true, .dp_overlap_grad_reduce = true, .dp_overlap_param_gather = true};
  const std::string ub = emit(nemo, plain, perf, m);
  CHECK(has(ub, "tp_comm_overlap=True"));
  CHECK(has(ub, "overlap_grad_reduce=True, overlap_param_gather=True"));
  CHECK(has(ub, "env_vars={\"CUDA_DEVICE_MAX_CONNECTIONS\": \"1\"}"));
  CHECK(has(emit(nemo, config_of({2, 4, 1}, 1, Recompute::none, false), perf, m),
            "tp_comm_overlap=False"));
  CHECK(has(emit(nemo, plain, {}, m), "overlap_grad_reduce=False, overlap_param_gather=False"));
  // ZeRO 0 has no parameter gather to overlap.
  CHECK(has(emit(nemo, config_of({2, 4, 1}, 0, Recompute::none, true), perf, m),
            "overlap_grad_reduce=True, overlap_param_gather=False"));
  // ...and the callback leaves the DDP config alone without the distributed optimizer
  // (megatron_comm_overlap.py L274-285): the recipe's overlaps (True) are set as priced there.
  const std::string zero0 = emit(nemo, config_of({2, 4, 1}, 0, Recompute::none, true), {}, m);
  CHECK(has(zero0,
            "recipe.trainer.strategy.ddp.overlap_grad_reduce = False\n"
            "recipe.trainer.strategy.ddp.overlap_param_gather = False\n"));
  CHECK(has(emit(nemo, config_of({2, 4, 1}, 0, Recompute::none, true), perf, m),
            "recipe.trainer.strategy.ddp.overlap_grad_reduce = True\n"));
  CHECK_FALSE(has(emit(nemo, plain, perf, m), "recipe.trainer.strategy.ddp.overlap"));
  // NeMo Hydra: NeMo 1.x builds no virtual stages (build_model.py L73-77 raises), so an
  // interleaved plan is refused, nearest VP 1; its file leaves userbuffers and the distributed
  // optimizers' DP overlaps off, their reduction in fp32.
  const Release& hydra = parse_release("nemo-hydra");
  const Export hydra_vp = export_plan(hydra, cluster, m, pp4);
  REQUIRE(hydra_vp.refusal.has_value());
  CHECK(hydra_vp.refusal->reason.kind == RefusalKind::interleaved);
  REQUIRE(hydra_vp.refusal->nearest.has_value());
  CHECK(hydra_vp.refusal->nearest->virtual_stages == 1);
  const std::string zero1 = emit(hydra, plain, perf, m);
  CHECK(has(zero1, "  ub_tp_comm_overlap: true\n"));
  CHECK(has(zero1, "    overlap_grad_sync: true\n    overlap_param_sync: true\n"));
  CHECK(has(emit(hydra, plain, bf16_reduce, m), "    grad_sync_dtype: bf16\n"));
  CHECK_FALSE(has(zero1, "align_param_gather"));
  // NeMo 2.0: the Llama 3.1 405B and Qwen3 235B recipes count the embedding and loss as layers,
  // which Megatron-Core refuses beside the layer counts: off in every script.
  CHECK(has(emit(nemo, pp4, {}, m),
            "recipe.trainer.strategy.account_for_embedding_in_pipeline_split = False\n"
            "recipe.trainer.strategy.account_for_loss_in_pipeline_split = False\n"));
  CHECK_FALSE(has(emit(hydra, plain, fp32_reduce, m), "grad_sync_dtype"));
}

TEST_CASE("DeepSpeed runs the DP overlap and reduction dtype the plan was priced with",
          "[export]") {
  const Cluster cluster = cluster_of(4);
  const Release& ds = parse_release("deepspeed");
  const Model m = llama8b();
  auto emit = [&](const ParallelConfig& c, const StackSwitches& s, const Model& model) {
    return emitted(ds, cluster, model, c, s);
  };
  // ZeRO-2 on 32 GPUs, TP 1: DeepSpeed overlaps the reduction by default only at stage 3.
  const ParallelConfig zero2 = config_of({1, 1, 1}, 2, Recompute::none, false);
  const StackSwitches overlapped{.dp_overlap_grad_reduce = true};
  CHECK(has(emit(zero2, overlapped, m),
            "\"zero_optimization\": {\"stage\": 2, \"overlap_comm\": true}"));
  CHECK(has(emit(zero2, {}, m), "\"zero_optimization\": {\"stage\": 2}"));
  // The deepspeed-megatron stack reduces bf16 training's gradients in fp32 (BLOOM's
  // BF16_Optimizer); DeepSpeed v0.19.5 reduces in the model's dtype unless told.
  const StackSwitches fp32{.grad_reduce_bytes = 4}, bf16{.grad_reduce_bytes = 2};
  CHECK(has(emit(zero2, fp32, m), "\"communication_data_type\": \"fp32\""));
  CHECK_FALSE(has(emit(zero2, bf16, m), "communication_data_type"));
}

TEST_CASE("Megatron-Core targets refuse torchtitan's per-op selective recompute", "[export]") {
  // Priced under --stack torchtitan, selective is its per-op policy (matmul outputs saved);
  // Megatron-Core recomputes whole modules: refused, nearest full recompute, which emits.
  const Cluster cluster = cluster_of(4);
  const ParallelConfig c = config_of({2, 1, 1}, 1, Recompute::selective, true);
  for (const char* name : {"megatron", "nemo", "nemo-hydra"}) {
    INFO(name);
    const Release& r = parse_release(name);
    const Export e = export_plan(r, cluster, llama8b(), c, SelectiveKind::per_op);
    REQUIRE(e.refusal.has_value());
    CHECK(e.refusal->change.kind == RefusalKind::selective_recompute);
    REQUIRE(e.refusal->nearest.has_value());
    CHECK(e.refusal->nearest->recompute == Recompute::full);
    CHECK_FALSE(export_plan(r, cluster, llama8b(), *e.refusal->nearest, SelectiveKind::per_op)
                    .refusal.has_value());
    // Megatron's own selective (core attention) emits.
    CHECK_FALSE(export_plan(r, cluster, llama8b(), c).refusal.has_value());
  }
}

TEST_CASE("launches run the attention kernel the plan was priced with", "[export]") {
  const Cluster cluster = cluster_of(4);
  const Model m = llama8b();
  const ParallelConfig c = config_of({2, 1, 1}, 1, Recompute::none, true);
  auto emit = [&](const char* release, AttentionKernel kernel) {
    return emitted(parse_release(release), cluster, m, c, {.attention = kernel});
  };
  // Megatron-LM and NeMo 2.0 name Megatron-Core's backend; auto (nothing) for Triton's kernel.
  CHECK(has(emit("megatron", AttentionKernel::cudnn), "\n  --attention-backend fused"));
  CHECK(has(emit("megatron", AttentionKernel::flash), "\n  --attention-backend flash"));
  CHECK(has(emit("megatron", AttentionKernel::unfused), "\n  --attention-backend unfused"));
  CHECK_FALSE(has(emit("megatron", AttentionKernel::flash_triton), "--attention-backend"));
  // ... and says so in a comment (a new user's find, 2026-12-07: nothing said it).
  CHECK(has(emit("megatron", AttentionKernel::flash_triton),
            "# attention: the plan was priced with FlashAttention's Triton kernel"));
  CHECK(has(emit("nemo", AttentionKernel::flash_triton), "for which NeMo has no attention"));
  CHECK(has(emit("nemo-hydra", AttentionKernel::flash_triton), "for which NeMo has no"));
  CHECK_FALSE(has(emit("megatron", AttentionKernel::flash), "# attention:"));
  // torchtitan v0.2.2 runs SDPA with cuDNN first: a plan priced otherwise says so (FSDP at TP 2
  // with sequence parallelism, which torchtitan writes).
  const ParallelConfig fsdp = config_of({2, 1, 1}, 3, Recompute::none, true);
  const auto titan = [&](AttentionKernel kernel) {
    return emitted(parse_release("torchtitan"), cluster, m, fsdp, {.attention = kernel});
  };
  CHECK(has(titan(AttentionKernel::flash),
            "the plan was priced with flash: a stack with attention: cudnn prices"));
  CHECK_FALSE(has(titan(AttentionKernel::cudnn), "# attention:"));
  const std::string nemo = emit("nemo", AttentionKernel::cudnn);
  CHECK(has(nemo, "from megatron.core.transformer.enums import AttnBackend\n"));
  CHECK(has(nemo, "recipe.model.config.attention_backend = AttnBackend.fused\n"));
  CHECK_FALSE(has(emit("nemo", AttentionKernel::flash_triton), "AttnBackend"));
  // NeMo Hydra: Transformer Engine's layers with Megatron-Core's backend (its default, auto,
  // asserts TE's NVTE_*_ATTN unset: no environment); unfused 16-bit attention keeps the file's
  // local layers.
  const std::string fused = emit("nemo-hydra", AttentionKernel::cudnn);
  CHECK(has(fused, "  transformer_engine: true\n  attention_backend: fused\n"));
  CHECK_FALSE(has(fused, "NVTE_"));
  CHECK(has(emit("nemo-hydra", AttentionKernel::flash), "  attention_backend: flash\n"));
  const std::string local = emit("nemo-hydra", AttentionKernel::unfused);
  CHECK_FALSE(has(local, "transformer_engine"));
  CHECK_FALSE(has(local, "attention_backend"));
}

TEST_CASE("releases: NAME[@VERSION], the first of each framework by default", "[export]") {
  CHECK(std::string(parse_release("megatron").version) == "core_v0.19.0");
  CHECK(std::string(parse_release("megatron@0.19.0").version) == "core_v0.19.0");
  CHECK(std::string(parse_release("deepspeed").version) == "v0.19.5");
  CHECK(std::string(parse_release("deepspeed@0.19.3").version) == "v0.19.3");
  CHECK(std::string(parse_release("torchtitan@v0.2.2").version) == "v0.2.2");
  CHECK_THROWS_WITH(parse_release("torchtitan@v9"),
                    "'torchtitan@v9': expected megatron|nemo|nemo-hydra|deepspeed|torchtitan|"
                    "megatron-deepspeed, optionally @VERSION: megatron@core_v0.19.0|nemo@v2.4.0|"
                    "nemo-hydra@v2.4.0|deepspeed@v0.19.5|deepspeed@v0.19.3|torchtitan@v0.2.2|"
                    "megatron-deepspeed@f4157bea");
}

TEST_CASE("torchtitan: stage count, local batch, no DDP beyond 1D", "[export]") {
  const Cluster cluster = cluster_of(4);
  const Release& titan = parse_release("torchtitan");
  // PP 4, v 2: 32 layers / (4 x 2) = 4 per stage; stages = ceil((32 + 0 + 0) / 4) = 8 = 4 x 2.
  // Per replica 256 / DP 4 = 64 sequences = local_batch_size, in 64 micro-batches of 1.
  const auto interleaved =
      export_plan(titan, cluster, llama8b(), config_of({2, 4, 2}, 2, Recompute::full, true));
  REQUIRE_FALSE(interleaved.refusal.has_value());
  const Settings s = parse_toml(interleaved.text);
  CHECK(s.at("parallelism.pipeline_parallel_layers_per_stage") == "4");
  CHECK(s.at("parallelism.pipeline_parallel_first_stage_less_layers") == "0");
  CHECK(s.at("parallelism.pipeline_parallel_last_stage_less_layers") == "0");
  CHECK(s.at("parallelism.pipeline_parallel_schedule") == "Interleaved1F1B");
  CHECK(s.at("training.local_batch_size") == "64");
  // PP 1, DP 32: local_batch_size is the micro-batch (1); torchtitan accumulates
  // 256 / (1 x 32) = 8 steps, trident's 8 micro-batches.
  const auto flat =
      export_plan(titan, cluster, llama8b(), config_of({1, 1, 1}, 3, Recompute::none, false));
  CHECK(parse_toml(flat.text).at("training.local_batch_size") == "1");
  CHECK(parse_toml(flat.text).at("parallelism.fsdp_reshard_after_forward") == "default");
  // ZeRO-0 with TP 2 would be DDP over a 2-D mesh: refused, nearest ZeRO-2 (FSDP2, no reshard).
  const auto ddp =
      export_plan(titan, cluster, llama8b(), config_of({2, 1, 1}, 0, Recompute::none, true));
  REQUIRE(ddp.refusal.has_value());
  CHECK(ddp.refusal->reason.kind == RefusalKind::ddp_multi_dim);
  CHECK(ddp.refusal->nearest->zero == 2);
  // ZeRO-1 (no such FSDP2 mode): without PP nearest ZeRO-2 (reshard never); with PP ZeRO-3,
  // which torchtitan runs without resharding after forward there (parallelize.py L319-327), the
  // same launch, and which --stack torchtitan prices (it has no ZeRO-2).
  const auto z1 = export_plan(parse_release("torchtitan"), cluster_of(4), llama8b(),
                              config_of({1, 1, 1}, 1, Recompute::none, false));
  CHECK(z1.refusal->nearest->zero == 2);
  const auto z1_pp = export_plan(parse_release("torchtitan"), cluster_of(4), llama8b(),
                                 config_of({1, 4, 1}, 1, Recompute::none, false));
  CHECK(z1_pp.refusal->nearest->zero == 3);
  // 70B and 405B: their flavors (the data file computes the FFN sizes from torchtitan's
  // multipliers: 70B 2/3 x 4 x 8192 = 21845, x 1.3 = 28398, up to a multiple of 4096 = 28672).
  for (const auto& [layers, hidden, heads, ffn] :
       {std::tuple{80, 8192, 64, 28672}, std::tuple{126, 16384, 128, 53248}}) {
    Model big = llama8b();
    big.layers = layers;
    big.hidden = hidden;
    big.heads = heads;
    big.ffn_hidden = ffn;
    big.training.global_batch = 32;
    const ParallelConfig c = config_of({2, 1, 1}, 3, Recompute::full, true);
    const auto e = export_plan(titan, cluster, big, c);
    REQUIRE_FALSE(e.refusal.has_value());
    CHECK(rules(titan, e.text, big, c) == "");
  }
  // Selective is not Megatron's selective: nearest is full recompute.
  const auto selective =
      export_plan(titan, cluster, llama8b(), config_of({1, 1, 1}, 3, Recompute::selective, false));
  CHECK(selective.refusal->nearest->recompute == Recompute::full);
}

TEST_CASE("Megatron-LM: ZeRO stages, FP8, FSDP without pipelining", "[export]") {
  const Cluster cluster = cluster_of(4);
  const Release& mlm = parse_release("megatron");
  Model fp8 = llama8b();
  fp8.training.dtype = Dtype::fp8;
  const auto zero2 = export_plan(mlm, cluster, fp8, config_of({2, 1, 1}, 2, Recompute::none, true));
  CHECK(zero2.text.find("  --data-parallel-sharding-strategy optim_grads \\\n") !=
        std::string::npos);
  CHECK(zero2.text.find("  --fp8-format hybrid \\\n  --fp8-recipe delayed") != std::string::npos);
  CHECK(zero2.text.find("CUDA_DEVICE_MAX_CONNECTIONS") == std::string::npos);
  const auto zero3 =
      export_plan(mlm, cluster, llama8b(), config_of({1, 4, 1}, 3, Recompute::none, false));
  REQUIRE(zero3.refusal.has_value());
  CHECK(zero3.refusal->nearest->zero == 1);
  const auto gpt =
      export_plan(mlm, cluster, gpt_style(), config_of({2, 4, 2}, 1, Recompute::full, true));
  CHECK(gpt.text.find("--untie-embeddings-and-output-weights") == std::string::npos);
  CHECK(gpt.text.find("  --num-layers-per-virtual-pipeline-stage 4 \\\n") != std::string::npos);
  // Heads not hidden / heads wide (Qwen3's 128 in a smaller hidden): --kv-channels, which
  // Megatron otherwise sets to hidden / heads; a model without head_dim writes none.
  Model wide = llama8b();
  wide.explicit_head_dim = 256;
  const auto qwen = export_plan(mlm, cluster, wide, config_of({2, 1, 1}, 1, Recompute::none, true));
  CHECK(qwen.text.find("  --kv-channels 256 \\\n") != std::string::npos);
  CHECK(zero2.text.find("--kv-channels") == std::string::npos);
  // NeMo's recipes and torchtitan's flavors have heads of hidden / heads: refused.
  CHECK(export_plan(parse_release("nemo"), cluster, wide,
                    config_of({2, 1, 1}, 1, Recompute::none, true))
            .refusal.has_value());
  CHECK(export_plan(parse_release("torchtitan"), cluster, wide,
                    config_of({2, 1, 1}, 1, Recompute::none, true))
            .refusal.has_value());
}

TEST_CASE("DeepSpeed: AutoTP, ZeRO-3 by release, batch identity", "[export]") {
  const Cluster cluster = cluster_of(4);
  const ParallelConfig tp2_zero3 = config_of({2, 1, 1}, 3, Recompute::full, false);
  const auto v5 = export_plan(parse_release("deepspeed@v0.19.5"), cluster, llama8b(), tp2_zero3);
  REQUIRE_FALSE(v5.refusal.has_value());
  const Settings s = parse_deepspeed(v5.text);
  // DP 16, micro-batch 1: 256 = 1 x 16 x 16 gradient accumulation steps.
  CHECK(s.at("gradient_accumulation_steps") == "16");
  CHECK(s.at("tensor_parallel.autotp_size") == "2");
  // No train_batch_size under AutoTP: initialize has no mpu, so DeepSpeed would check it
  // against all 32 ranks (1 x 16 x 32 = 512, not 256) and stop (runtime/config.py L697-712,
  // L924 @v0.19.5).
  CHECK(s.count("train_batch_size") == 0);
  CHECK(v5.text.find("# train_batch_size left out") != std::string::npos);
  // It then reports, and counts samples at, 1 x 16 x 32 = 512: the comment says so.
  CHECK(v5.text.find("the global batch is micro x accumulation x DP 16 = 256; DeepSpeed will "
                     "report train_batch_size 512 (x TP 2) and count samples at that rate: set a "
                     "sample- or token-based schedule from 256\n") != std::string::npos);
  const auto tp1 = export_plan(parse_release("deepspeed"), cluster, llama8b(),
                               config_of({1, 1, 1}, 3, Recompute::full, false));
  CHECK(parse_deepspeed(tp1.text).at("train_batch_size") == "256");
  const auto v3 = export_plan(parse_release("deepspeed@v0.19.3"), cluster, llama8b(), tp2_zero3);
  REQUIRE(v3.refusal.has_value());
  CHECK(v3.refusal->nearest->zero == 2);
  const auto piped = export_plan(parse_release("deepspeed"), cluster, llama8b(),
                                 config_of({2, 4, 1}, 1, Recompute::none, false));
  REQUIRE(piped.refusal.has_value());  // AutoTP has no pipeline axis: TP 1, DP 4 x 2 = 8
  CHECK(piped.refusal->nearest->tp == 1);
  CHECK(piped.refusal->nearest->dp == 8);
  // Moving TP 2 into DP doubles DP 8 to 16. Global batch 32, micro-batch 4: 16 x 4 = 64 does
  // not divide 32, micro-batch 1 does (32 / 16 = 2 micro-batches). Global batch 24: 24 / 16
  // is no whole number at any micro-batch, so no nearest split, only what to change.
  Model small = llama8b();
  small.training.global_batch = 32;
  ParallelConfig mb4 = config_of({2, 2, 1}, 1, Recompute::none, false);
  mb4.micro_batch = 4;
  const auto fallback = export_plan(parse_release("deepspeed"), cluster, small, mb4);
  REQUIRE(fallback.refusal->nearest.has_value());
  CHECK(fallback.refusal->nearest->micro_batch == 1);
  small.training.global_batch = 24;
  ParallelConfig mb1 = mb4;
  mb1.micro_batch = 1;
  const auto none = export_plan(parse_release("deepspeed"), cluster, small, mb1);
  CHECK_FALSE(none.refusal->nearest.has_value());
  CHECK(none.refusal->no_dividing_split);
}

TEST_CASE("Megatron-DeepSpeed: GPTModelPipe's split, ZeRO-2/3 off the pipe engine, bf16 grads",
          "[export]") {
  const Release& mds = parse_release("megatron-deepspeed");
  const Cluster cluster = cluster_of(4);
  // The deepspeed-megatron stack's reduction: fp32 gradients (grad_reduce_bytes 4), unfused
  // attention (CoreAttention, no flag).
  const StackSwitches stack{.grad_reduce_bytes = 4, .attention = AttentionKernel::unfused};
  const auto run = [&](const Model& m, const ParallelConfig& c) {
    return export_plan(mds, cluster, m, c, SelectiveKind::attention, CpKind::p2p, stack);
  };
  // TP 2 PP 4 DP 4, ZeRO-1, full recompute: 256 = 1 x 64 x 4 (64 accumulation steps); bf16 at
  // ZeRO-1 keeps fp32 gradients in BF16_Optimizer (grad_accum_dtype) and reduces them in fp32.
  const ParallelConfig zero1 = config_of({2, 4, 1}, 1, Recompute::full, false);
  const std::string text = emitted(mds, cluster, llama8b(), zero1, stack);
  const Settings json = parse_heredoc_json(text, "ds_config.json");
  CHECK(json.at("gradient_accumulation_steps") == "64");
  CHECK(json.at("data_types.grad_accum_dtype") == "\"fp32\"");
  CHECK(json.at("communication_data_type") == "\"fp32\"");
  CHECK(has(text,
            "  --checkpoint-activations \\\n  --checkpoint-num-layers 1 \\\n"
            "  --deepspeed-activation-checkpointing \\\n"));
  CHECK_FALSE(has(text, "--use-flash-attn"));  // unfused as priced
  // The same plan at ZeRO-0: DeepSpeed raises for bf16 with fp32 gradients (engine.py
  // L1976-1977): refused, nearest ZeRO-1.
  const auto zero0 = run(llama8b(), config_of({2, 4, 1}, 0, Recompute::full, false));
  REQUIRE(zero0.refusal.has_value());
  CHECK(zero0.refusal->reason.kind == RefusalKind::bf16_unsharded);
  CHECK(zero0.refusal->nearest->zero == 1);
  // ZeRO-3: the pipe engine asserts stage < 2 even at PP 1, so --no-pipeline-parallel; with
  // PP 4 refused, nearest ZeRO-1.
  CHECK(
      has(emitted(mds, cluster, llama8b(), config_of({2, 1, 1}, 3, Recompute::none, false), stack),
          "  --no-pipeline-parallel \\\n"));
  const auto zero3_pp = run(llama8b(), config_of({1, 4, 1}, 3, Recompute::none, false));
  REQUIRE(zero3_pp.refusal.has_value());
  CHECK(zero3_pp.refusal->nearest->zero == 1);
  // GPTModelPipe's 'type:transformer' split: the first L mod PP stages one layer more. 31 over
  // 4: trident 8 | 8 8 | 7 (ceil 8, one short, off the last), the pipe 8, 8, 8, 7: written.
  // 30 over 4: trident 7 | 8 8 | 7, the pipe 8, 8, 7, 7: refused, no knob of the split fixes it.
  Model odd = llama8b();
  odd.layers = 31;
  CHECK(has(emitted(mds, cluster, odd, config_of({1, 4, 1}, 1, Recompute::none, false), stack),
            "8 on stages 0-2, 7 on stage 3"));
  odd.layers = 30;
  const auto uneven = run(odd, config_of({1, 4, 1}, 1, Recompute::none, false));
  REQUIRE(uneven.refusal.has_value());
  CHECK(uneven.refusal->reason.kind == RefusalKind::uneven_stages);
  CHECK_FALSE(uneven.refusal->nearest.has_value());
  // Interleaving and sequence parallelism with PP: refused with VP 1 and SP off as the nearest.
  // SP at PP 1 runs off the pipeline engine with one device connection, as the repository's
  // own example (pretrain_gpt_30B_seq_parallel.sh L299-332).
  const auto vp = run(llama8b(), config_of({1, 4, 2}, 1, Recompute::none, false));
  CHECK(vp.refusal->nearest->virtual_stages == 1);
  const auto sp = run(llama8b(), config_of({2, 4, 1}, 1, Recompute::none, true));
  CHECK_FALSE(sp.refusal->nearest->sequence_parallel);
  const std::string flat_sp =
      emitted(mds, cluster, llama8b(), config_of({2, 1, 1}, 1, Recompute::full, true), stack);
  CHECK(has(flat_sp, "\nCUDA_DEVICE_MAX_CONNECTIONS=1 torchrun "));
  CHECK(has(flat_sp, "  --no-pipeline-parallel \\\n  --sequence-parallel \\\n"));
  // Selective recompute runs only in the unfused CoreAttention: under FlashAttention, full.
  const ParallelConfig selective = config_of({2, 1, 1}, 1, Recompute::selective, false);
  CHECK(has(emitted(mds, cluster, llama8b(), selective, stack),
            "  --recompute-granularity selective \\\n"));
  StackSwitches flash = stack;
  flash.attention = AttentionKernel::flash;
  const auto flash_selective =
      export_plan(mds, cluster, llama8b(), selective, SelectiveKind::attention, CpKind::p2p, flash);
  CHECK(flash_selective.refusal->nearest->recompute == Recompute::full);
  // cuDNN's fused attention, which it lacks: FlashAttention 2 written, and said.
  StackSwitches cudnn = stack;
  cudnn.attention = AttentionKernel::cudnn;
  const std::string fused = emitted(mds, cluster, llama8b(), zero1, cudnn);
  CHECK(has(fused, "  --use-flash-attn-v2 \\\n"));
  CHECK(has(fused, "# attention: the plan was priced with cuDNN's fused attention"));
  // No flag for a per-head Q/K norm.
  Model qk = llama8b();
  qk.qk_layernorm = true;
  CHECK(run(qk, zero1).refusal->reason.kind == RefusalKind::qk_norm);
  // The reduction as the deepspeed-megatron stack priced this split (Stack::reduce_bytes):
  // fp32 gradients under the pipeline engine (grad_reduce_bytes 4: BF16_Optimizer, reduced in
  // fp32), the ZeRO optimizer's 16-bit reduction at PP 1 from ZeRO-1 on (zero_reduce_bytes 2):
  // no fp32 keys there, DeepSpeed's bf16 default.
  const Stack ds = stack_preset("deepspeed-megatron");
  const ParallelConfig flat = config_of({2, 1, 1}, 2, Recompute::none, false);
  CHECK(stack_switches(ds, false, Dtype::bf16, zero1).grad_reduce_bytes == 4);
  CHECK(stack_switches(ds, false, Dtype::bf16, flat).grad_reduce_bytes == 2);
  const Settings flat_json = parse_heredoc_json(
      emitted(mds, cluster, llama8b(), flat, stack_switches(ds, false, Dtype::bf16, flat)),
      "ds_config.json");
  CHECK(flat_json.count("communication_data_type") == 0);
  CHECK(flat_json.count("data_types.grad_accum_dtype") == 0);
}

TEST_CASE("SGD: pretrain_gpt.py's --optimizer sgd; targets written with Adam refuse", "[export]") {
  const Cluster cluster = cluster_of(4);
  Model sgd = llama8b();
  sgd.training.optimizer = Optimizer::sgd;
  const ParallelConfig c = config_of({2, 1, 1}, 1, Recompute::none, false);
  const StackSwitches unfused{.attention = AttentionKernel::unfused};
  // Megatron-LM's distributed optimizer (ZeRO-1; Megatron-FSDP turns it on for 2/3) asserts
  // Adam (distrib_optimizer.py L688-695 @core_v0.19.0): SGD runs at ZeRO-0 there.
  const ParallelConfig ddp = config_of({2, 1, 1}, 0, Recompute::none, false);
  CHECK(has(emitted(parse_release("megatron"), cluster, sgd, ddp, {}), "  --optimizer sgd"));
  for (const int zero : {1, 3}) {
    const Export sharded = export_plan(parse_release("megatron"), cluster, sgd,
                                       config_of({2, 1, 1}, zero, Recompute::none, false));
    REQUIRE(sharded.refusal.has_value());
    CHECK(sharded.refusal->reason.kind == RefusalKind::sgd_sharded);
    REQUIRE(sharded.refusal->nearest.has_value());
    CHECK(sharded.refusal->nearest->zero == 0);
  }
  CHECK(has(emitted(parse_release("megatron-deepspeed"), cluster, sgd, c, unfused),
            "  --optimizer sgd"));
  CHECK_FALSE(has(emitted(parse_release("megatron"), cluster, llama8b(), c, {}), "--optimizer"));
  CHECK(has(export_plan(parse_release("deepspeed"), cluster, sgd,
                        config_of({1, 1, 1}, 1, Recompute::none, false))
                .text,
            "the optimizer (SGD, as the plan was priced)"));
  for (const char* name : {"nemo", "nemo-hydra", "torchtitan"}) {
    INFO(name);
    const Export e = export_plan(parse_release(name), cluster, sgd, c);
    REQUIRE(e.refusal.has_value());
    CHECK(e.refusal->reason.kind == RefusalKind::sgd);
  }
}

TEST_CASE("NeMo 2.0: a recipe with the plan set, context parallelism off", "[export]") {
  const Release& nemo = parse_release("nemo");
  const ParallelConfig c = config_of({2, 4, 2}, 1, Recompute::full, true);
  const auto e = export_plan(nemo, cluster_of(4), llama8b(), c);
  REQUIRE_FALSE(e.refusal.has_value());
  const Settings s = parse_nemo2(e.text);
  CHECK(s.at("recipe") == "llama3_8b");
  CHECK(s.at("recipe.trainer.strategy.context_parallel_size") == "1");
  CHECK(s.at("recipe.trainer.strategy.virtual_pipeline_model_parallel_size") == "2");
  CHECK(s.at("recipe.model.config.recompute_method") == "uniform");
  // GPT-3-style shapes map to gpt3_175b only at its size; this one has no recipe.
  const auto gpt = export_plan(nemo, cluster_of(4), gpt_style(), c);
  REQUIRE(gpt.refusal.has_value());
  CHECK(gpt.refusal->change.kind == RefusalKind::model_shape);
  CHECK(gpt.refusal->change.other_release == "nemo-hydra");
}

TEST_CASE("NeMo Hydra: ZeRO-3 is torch FSDP full sharding", "[export]") {
  const auto e = export_plan(parse_release("nemo-hydra"), cluster_of(4), llama8b(),
                             config_of({2, 1, 1}, 3, Recompute::selective, true));
  Settings s;
  flatten_yaml(YAML::Load(e.text), "", s);
  CHECK(s.at("model.fsdp") == "true");
  CHECK(s.at("model.fsdp_sharding_strategy") == "full");
  CHECK(s.at("model.optim.name") == "fused_adam");
  CHECK(s.at("model.num_query_groups") == "8");
}

TEST_CASE("a cordoned GPU: uneven nodes refused, a cordoned server emitted", "[export]") {
  // 4 servers of 8, GPU 1 of server 1 dead: 31 live GPUs. 24 ranks on the first 24 live GPUs:
  // server 0 runs 8, server 1 runs 7, server 2 runs 8, server 3 runs 1.
  Cluster cluster = cluster_of(4);
  cluster.health.dead_gpus = {9};
  const ParallelConfig c = [] {
    ParallelConfig x;
    x.tp = 2;
    x.pp = 2;
    x.dp = 6;
    x.zero = 1;
    x.sequence_parallel = true;
    return x;
  }();
  Model model = llama8b();
  model.training.global_batch = 240;  // DP 6 x 40
  for (const Release& r : releases()) {
    const Export e = export_plan(r, cluster, model, c);
    REQUIRE(e.refusal.has_value());
    const Obstacle& uneven = e.refusal->reason;
    CHECK(uneven.kind == RefusalKind::uneven_ranks);
    CHECK(std::tie(uneven.server, uneven.ranks, uneven.other_server, uneven.other_ranks) ==
          std::tuple(0, 8, 1, 7));
    CHECK(uneven.dead_server == 1);  // cordon the whole server
    CHECK_FALSE(e.refusal->nearest.has_value());
  }
  // Server 1 cordoned: the 24 ranks fill servers 0, 2 and 3.
  cluster.health.dead_servers = {1};
  const Export mlm = export_plan(parse_release("megatron"), cluster, model, c);
  REQUIRE_FALSE(mlm.refusal.has_value());
  CHECK(mlm.text.find("# nodes: servers 0,2-3 of the cluster") != std::string::npos);
  CHECK(mlm.text.find("torchrun --nnodes 3 --nproc-per-node 8 ") != std::string::npos);
  CHECK(rules(parse_release("megatron"), mlm.text, model, c) == "");
}

TEST_CASE("torchtitan: selective means what the plan's stack priced", "[export][stack]") {
  const Cluster cluster = cluster_of(4);
  const Release& titan = parse_release("torchtitan");
  const ParallelConfig config = config_of({2, 1, 16}, 3, Recompute::selective, true);
  // Priced under megatron-core, selective is Megatron's attention-only recompute: refused.
  CHECK(export_plan(titan, cluster, llama8b(), config).refusal.has_value());
  // Priced under --stack torchtitan, it is torchtitan's per-op policy.
  const auto per_op = export_plan(titan, cluster, llama8b(), config, SelectiveKind::per_op);
  REQUIRE_FALSE(per_op.refusal.has_value());
  const Settings s = parse_toml(per_op.text);
  CHECK(s.at("activation_checkpoint.mode") == "selective");
  CHECK(s.at("activation_checkpoint.selective_ac_option") == "op");
  CHECK(s.at("parallelism.fsdp_reshard_after_forward") == "default");
}

TEST_CASE("context parallelism: each target writes the kind it runs, the others fold it",
          "[export]") {
  // 32 GPUs: TP 2 x CP 2 x DP 8, sequence 8192 (2 x CP divides it). Megatron-LM and NeMo run
  // Transformer Engine's ring (p2p) or Ulysses (a2a); torchtitan PyTorch's all-gather rotater.
  const Cluster cluster = cluster_of(4);
  ParallelConfig te = config_of({2, 1, 1}, 1, Recompute::selective, true);
  te.dp = 8;
  te.cp = 2;
  ParallelConfig titan_plan = config_of({2, 1, 1}, 3, Recompute::full, true);
  titan_plan.dp = 8;
  titan_plan.cp = 2;
  for (const Release& r : releases()) {
    const bool titan = r.framework == Framework::torchtitan;
    const bool writes = r.framework == Framework::megatron || r.framework == Framework::nemo;
    INFO(release_id(r));
    for (const CpKind kind : {CpKind::p2p, CpKind::a2a, CpKind::all_gather}) {
      const ParallelConfig& c = titan ? titan_plan : te;
      // torchtitan's selective recompute is its per-op policy, the others' Megatron's.
      const SelectiveKind selective = titan ? SelectiveKind::per_op : SelectiveKind::attention;
      const auto e = export_plan(r, cluster, llama8b(), c, selective, kind);
      const bool runs =
          (writes && kind != CpKind::all_gather) || (titan && kind == CpKind::all_gather);
      INFO(to_string(kind));
      if (runs) {
        REQUIRE_FALSE(e.refusal.has_value());
        CHECK(rules(r, e.text, llama8b(), c) == "");
        continue;
      }
      REQUIRE(e.refusal.has_value());
      if (e.refusal->reason.kind != RefusalKind::context_parallel)
        continue;  // another obstacle first
      REQUIRE(e.refusal->nearest.has_value());
      CHECK(e.refusal->nearest->dp == 16);
      CHECK(e.refusal->nearest->cp == 1);
    }
  }
  const auto mlm = export_plan(parse_release("megatron"), cluster, llama8b(), te,
                               SelectiveKind::attention, CpKind::a2a);
  REQUIRE_FALSE(mlm.refusal.has_value());
  CHECK(mlm.text.find("--context-parallel-size 2 \\\n  --cp-comm-type a2a") != std::string::npos);
  // The header's summary of the plan names its CP too (it read as a DP-only split).
  CHECK(mlm.text.substr(0, mlm.text.find('\n')).find(" SP on CP2, ") != std::string::npos);
  const auto gathered = export_plan(parse_release("torchtitan"), cluster, llama8b(), titan_plan,
                                    SelectiveKind::per_op, CpKind::all_gather);
  REQUIRE_FALSE(gathered.refusal.has_value());
  const Settings s = parse_toml(gathered.text);
  CHECK(s.at("parallelism.context_parallel_degree") == "2");
  CHECK(s.at("parallelism.context_parallel_rotate_method") == "allgather");
  // ZeRO-0 with CP: torchtitan shards over the CP ranks anyway (no DDP): refused.
  ParallelConfig ddp = titan_plan;
  ddp.zero = 0;
  ddp.tp = 1;
  ddp.sequence_parallel = false;
  ddp.dp = 16;
  const auto no_ddp = export_plan(parse_release("torchtitan"), cluster, llama8b(), ddp,
                                  SelectiveKind::per_op, CpKind::all_gather);
  REQUIRE(no_ddp.refusal.has_value());
  CHECK(no_ddp.refusal->reason.kind == RefusalKind::ddp_multi_dim);
}

TEST_CASE("hybrid sharding (HSDP): torchtitan writes its two degrees, the others refuse",
          "[export]") {
  // 32 GPUs: TP 1 x DP 32, ZeRO-3 sharded over 8 DP ranks, 4 replicas.
  const Cluster cluster = cluster_of(4);
  ParallelConfig c = config_of({1, 1, 1}, 3, Recompute::none, false);  // dp = 32
  c.zero = 3;
  c.dp_shard = 8;
  const auto titan = export_plan(parse_release("torchtitan"), cluster, llama8b(), c);
  REQUIRE_FALSE(titan.refusal.has_value());
  CHECK(titan.text.find("data_parallel_replicate_degree = 4\ndata_parallel_shard_degree = 8\n") !=
        std::string::npos);
  for (const char* name : {"megatron", "nemo", "nemo-hydra", "deepspeed"}) {
    const auto out = export_plan(parse_release(name), cluster, llama8b(), c);
    INFO(name);
    REQUIRE(out.refusal.has_value());
    CHECK(out.refusal->reason.kind == RefusalKind::hybrid_shard);
    // The nearest plan: the same split sharded over all of DP (or a further fix of the target).
    REQUIRE(out.refusal->nearest.has_value());
    CHECK_FALSE(out.refusal->nearest->hybrid_shard());
  }
}

TEST_CASE("partial full recompute: Megatron's block method, torchtitan's every k-th layer",
          "[export]") {
  const Cluster cluster = cluster_of(4);
  ParallelConfig c = config_of({2, 4, 1}, 1, Recompute::full, true);  // 32 layers: 8 a stage
  c.recompute_layers = 2;
  // Megatron-LM: --recompute-method block, the first 2 layers of each chunk.
  const auto mlm = export_plan(parse_release("megatron"), cluster, llama8b(), c);
  REQUIRE_FALSE(mlm.refusal.has_value());
  CHECK(rules(parse_release("megatron"), mlm.text, llama8b(), c) == "");
  CHECK(mlm.text.find("  --recompute-method block \\\n  --recompute-num-layers 2") !=
        std::string::npos);
  const auto nemo = export_plan(parse_release("nemo"), cluster, llama8b(), c);
  REQUIRE_FALSE(nemo.refusal.has_value());
  CHECK(rules(parse_release("nemo"), nemo.text, llama8b(), c) == "");
  CHECK(nemo.text.find("recompute_method = \"block\"") != std::string::npos);
  CHECK(nemo.text.find("recompute_num_layers = 2") != std::string::npos);
  const auto hydra = export_plan(parse_release("nemo-hydra"), cluster, llama8b(), c);
  REQUIRE_FALSE(hydra.refusal.has_value());
  CHECK(rules(parse_release("nemo-hydra"), hydra.text, llama8b(), c) == "");
  CHECK(hydra.text.find("activations_checkpoint_method: block") != std::string::npos);
  CHECK(hydra.text.find("activations_checkpoint_num_layers: 2") != std::string::npos);
  // torchtitan (FSDP2 + TP, one stage: 32 layers): every 16th block recomputes 2 of them.
  ParallelConfig titan_plan = config_of({2, 1, 1}, 3, Recompute::full, true);
  titan_plan.recompute_layers = 2;
  const Release& titan = parse_release("torchtitan");
  const auto every = export_plan(titan, cluster, llama8b(), titan_plan);
  REQUIRE_FALSE(every.refusal.has_value());
  CHECK(rules(titan, every.text, llama8b(), titan_plan) == "");
  const Settings s = parse_toml(every.text);
  CHECK(s.at("activation_checkpoint.mode") == "selective");
  CHECK(s.at("activation_checkpoint.selective_ac_option") == "16");
  // 12 of 32: no k divides 32 into 12 (32/12 is no integer): refused, nearest every layer.
  titan_plan.recompute_layers = 12;
  const auto none = export_plan(titan, cluster, llama8b(), titan_plan);
  REQUIRE(none.refusal.has_value());
  CHECK(none.refusal->reason.kind == RefusalKind::partial_recompute);
  REQUIRE(none.refusal->nearest.has_value());
  CHECK(none.refusal->nearest->recompute_layers == 0);
  // At least the chunk's layers is every layer: plain full recompute.
  titan_plan.recompute_layers = 40;
  const auto all = export_plan(titan, cluster, llama8b(), titan_plan);
  REQUIRE_FALSE(all.refusal.has_value());
  CHECK(parse_toml(all.text).at("activation_checkpoint.mode") == "full");
  // DeepSpeed writes full recompute only.
  const auto ds = export_plan(parse_release("deepspeed"), cluster, llama8b(),
                              config_of({1, 1, 1}, 1, Recompute::full, false));
  ParallelConfig ds_partial = config_of({1, 1, 1}, 1, Recompute::full, false);
  ds_partial.recompute_layers = 4;
  CHECK_FALSE(ds.refusal.has_value());
  CHECK(
      export_plan(parse_release("deepspeed"), cluster, llama8b(), ds_partial).refusal.has_value());
}

TEST_CASE("uneven pipeline stages: written as the plan splits them, or refused", "[export]") {
  const Cluster cluster = cluster_of(3);  // 24 GPUs
  Model m = llama8b();
  m.training.global_batch = 24;
  ParallelConfig c;
  c.tp = 1;
  c.pp = 3;
  c.dp = 8;
  c.zero = 1;
  // 32 layers over 3 stages (stage_layers): ceil 11, one short: 11 | 11 | 10.
  const auto mlm = export_plan(parse_release("megatron"), cluster, m, c);
  REQUIRE_FALSE(mlm.refusal.has_value());
  CHECK(mlm.text.find("  --decoder-first-pipeline-num-layers 11 \\\n"
                      "  --decoder-last-pipeline-num-layers 10 \\\n") != std::string::npos);
  CHECK(rules(parse_release("megatron"), mlm.text, m, c) == "");
  const auto nemo = export_plan(parse_release("nemo"), cluster, m, c);
  REQUIRE_FALSE(nemo.refusal.has_value());
  CHECK(nemo.text.find("recipe.trainer.strategy.num_layers_in_first_pipeline_stage = 11\n"
                       "recipe.trainer.strategy.num_layers_in_last_pipeline_stage = 10\n") !=
        std::string::npos);
  // torchtitan: per stage 11, the last one short; (32 + 0 + 1) / 11 = 3 stages of 11 effective.
  c.zero = 3;
  const auto titan = export_plan(parse_release("torchtitan"), cluster, m, c);
  REQUIRE_FALSE(titan.refusal.has_value());
  const Settings s = parse_toml(titan.text);
  CHECK(s.at("parallelism.pipeline_parallel_layers_per_stage") == "11");
  CHECK(s.at("parallelism.pipeline_parallel_first_stage_less_layers") == "0");
  CHECK(s.at("parallelism.pipeline_parallel_last_stage_less_layers") == "1");
  CHECK(rules(parse_release("torchtitan"), titan.text, m, c) == "");
  {
    // Interleaved: 32 layers over PP 6 (4 | 6 x 4 | 4) with VP 2, chunks of 6 / 2 = 3. The
    // same counts shorten the first and last of the (32 + 2 + 2) / 3 = 12 virtual stages by
    // 2 each: rank 0 runs stages 0 and 6, 1 + 3 = 4 layers; rank 5 stages 5 and 11, 3 + 1.
    ParallelConfig six = c;
    six.pp = 6;
    six.virtual_stages = 2;
    Model m48 = m;
    m48.training.global_batch = 48;
    const Cluster six_servers = cluster_of(6);
    const auto titan_v = export_plan(parse_release("torchtitan"), six_servers, m48, six);
    REQUIRE_FALSE(titan_v.refusal.has_value());
    const Settings sv = parse_toml(titan_v.text);
    CHECK(sv.at("parallelism.pipeline_parallel_schedule") == "Interleaved1F1B");
    CHECK(sv.at("parallelism.pipeline_parallel_layers_per_stage") == "3");
    CHECK(sv.at("parallelism.pipeline_parallel_first_stage_less_layers") == "2");
    CHECK(sv.at("parallelism.pipeline_parallel_last_stage_less_layers") == "2");
    CHECK(rules(parse_release("torchtitan"), titan_v.text, m48, six) == "");
    // VP 6: chunks of 1, and each end's gap of 2 exceeds one (torchtitan raises where a weight
    // is above the layers per stage): nearest the most virtual stages below that fit, VP 3
    // (chunks of 2; VP 5 and 4 do not divide 6).
    six.virtual_stages = 6;
    const auto titan_v6 = export_plan(parse_release("torchtitan"), six_servers, m48, six);
    REQUIRE(titan_v6.refusal.has_value());
    CHECK(titan_v6.refusal->reason.kind == RefusalKind::uneven_stages);
    REQUIRE(titan_v6.refusal->nearest.has_value());
    CHECK(titan_v6.refusal->nearest->virtual_stages == 3);
  }
  // NeMo Hydra: the counts are TransformerConfig fields the model takes from its config.
  c.zero = 1;
  const auto hydra = export_plan(parse_release("nemo-hydra"), cluster, m, c);
  REQUIRE_FALSE(hydra.refusal.has_value());
  CHECK(hydra.text.find("  num_layers_in_first_pipeline_stage: 11\n"
                        "  num_layers_in_last_pipeline_stage: 10\n") != std::string::npos);
  CHECK(rules(parse_release("nemo-hydra"), hydra.text, m, c) == "");
  // Interleaved: 126 layers over 16 stages (7 | 8 x 14 | 7) with VP 2. Megatron-Core's layout
  // lists the 32 chunks round by round (chunk c of stage r is segment 16c + r): round 0 the
  // first stage's 3 (its longer chunk away from the embedding: 7 = 3 + 4) and 4 on each other
  // stage, round 1 4 everywhere but the last stage's 3 before the loss (7 = 4 + 3); no chunk
  // over the pace-setting stage's 8 / 2 = 4. 3 + 15 x 4 + 15 x 4 + 3 = 126.
  Model big = llama8b();
  big.layers = 126;
  big.training.global_batch = 32;
  const Cluster wide = cluster_of(4);
  ParallelConfig v;
  v.tp = 2;
  v.pp = 16;
  v.dp = 1;
  v.virtual_stages = 2;
  v.zero = 1;
  v.sequence_parallel = true;
  std::string rounds = "Et*3";
  for (int i = 0; i < 30; ++i) rounds += "|t*4";
  rounds += "|t*3L";
  const auto interleaved = export_plan(parse_release("megatron"), wide, big, v);
  REQUIRE_FALSE(interleaved.refusal.has_value());
  CHECK(has(interleaved.text,
            ("  --pipeline-model-parallel-layout \"" + rounds + "\" \\\n").c_str()));
  CHECK_FALSE(has(interleaved.text, "--num-layers-per-virtual-pipeline-stage"));
  CHECK_FALSE(has(interleaved.text, "--decoder-first-pipeline-num-layers"));
  CHECK(rules(parse_release("megatron"), interleaved.text, big, v) == "");
  // NeMo 2.0 the same through MegatronStrategy, on its Llama 3 8B recipe: 32 layers over 13
  // stages (1 | 3 x 8, 2 x 3 | 1) with VP 3, chunks of at most 3 / 3 = 1. The first stage's
  // one layer in its last chunk (away from the embedding), the last stage's in its first
  // (away from the loss), the two-layer stages' in their first two: round 0 "E" and 12 "t",
  // round 1 the ends empty and 11 "t", round 2 "t", 8 "t", 3 empty, "L". 12 + 11 + 9 = 32.
  Model llama13v = llama8b();
  llama13v.training.global_batch = 13;
  const ParallelConfig thirteen_v = one_pipeline(13, 3);
  std::string round0 = "E";
  for (int i = 0; i < 12; ++i) round0 += "|t";
  std::string round1 = "|";
  for (int i = 0; i < 11; ++i) round1 += "|t";
  round1 += "|";
  std::string round2 = "|t";
  for (int i = 0; i < 8; ++i) round2 += "|t";
  round2 += "||||L";
  const auto nemo_interleaved =
      export_plan(parse_release("nemo"), cluster_of_singles(13), llama13v, thirteen_v);
  REQUIRE_FALSE(nemo_interleaved.refusal.has_value());
  CHECK(has(nemo_interleaved.text, "virtual_pipeline_model_parallel_size = 3\n"));
  CHECK(has(nemo_interleaved.text,
            ("pipeline_model_parallel_layout = \"" + round0 + round1 + round2 + "\"\n").c_str()));
  CHECK(rules(parse_release("nemo"), nemo_interleaved.text, llama13v, thirteen_v) == "");
  // The Hydra file: NeMo 1.x builds no virtual stages (build_model.py L73-77): nearest VP 1,
  // whose uneven split (7 | 8 x 14 | 7) its first/last counts write.
  const auto hydra_interleaved = export_plan(parse_release("nemo-hydra"), wide, big, v);
  REQUIRE(hydra_interleaved.refusal.has_value());
  CHECK(hydra_interleaved.refusal->reason.kind == RefusalKind::interleaved);
  REQUIRE(hydra_interleaved.refusal->nearest.has_value());
  CHECK(hydra_interleaved.refusal->nearest->virtual_stages == 1);
  CHECK_FALSE(
      export_plan(parse_release("nemo-hydra"), wide, big, *hydra_interleaved.refusal->nearest)
          .refusal);
  // 96 layers over 21 stages: ceil 5, 9 short, 4 off each end, 1 off one middle stage: the
  // middle stages differ, which first/last counts cannot write: Megatron-Core's layout does,
  // 1 | 5 x 18 | 4 | 1 (1 + 90 + 4 + 1 = 96), the embedding first and the loss last.
  Model gpt = gpt_style();
  gpt.layers = 96;
  gpt.training.global_batch = 21;
  const ParallelConfig odd = one_pipeline(21);
  const Cluster singles = cluster_of_singles(21);  // the ranks fill whole servers
  std::string layout = "Et";
  for (int i = 0; i < 18; ++i) layout += "|t*5";
  layout += "|t*4|tL";
  const auto mixed = export_plan(parse_release("megatron"), singles, gpt, odd);
  REQUIRE_FALSE(mixed.refusal.has_value());
  CHECK(has(mixed.text, ("  --pipeline-model-parallel-layout \"" + layout + "\" \\\n").c_str()));
  CHECK_FALSE(has(mixed.text, "--decoder-first-pipeline-num-layers"));
  CHECK(rules(parse_release("megatron"), mixed.text, gpt, odd) == "");
  // NeMo 2.0 the same through MegatronStrategy (Llama 3 8B's recipe: 32 layers over 13
  // stages, ceil 3, 7 short: 1 | 3 x 8, 2 x 3 | 1); the Hydra file has no layout: refused.
  Model llama13 = llama8b();
  llama13.training.global_batch = 13;
  const ParallelConfig thirteen = one_pipeline(13);
  const auto nemo_mixed =
      export_plan(parse_release("nemo"), cluster_of_singles(13), llama13, thirteen);
  REQUIRE_FALSE(nemo_mixed.refusal.has_value());
  CHECK(has(nemo_mixed.text,
            "recipe.trainer.strategy.pipeline_model_parallel_layout = \"Et|t*3|"
            "t*3|t*3|t*3|t*3|t*3|t*3|t*3|t*2|t*2|t*2|tL\"\n"));
  CHECK(rules(parse_release("nemo"), nemo_mixed.text, llama13, thirteen) == "");
  const auto hydra_mixed = export_plan(parse_release("nemo-hydra"), singles, gpt, odd);
  REQUIRE(hydra_mixed.refusal.has_value());
  CHECK(hydra_mixed.refusal->reason.kind == RefusalKind::uneven_stages);
  CHECK_FALSE(hydra_mixed.refusal->nearest.has_value());
  // With MTP layers: after the last stage's decoder layers, before the loss.
  Model rope96 = llama8b();  // MTP runs with RoPE positions only (arguments.py:856-860)
  rope96.layers = 96;
  rope96.mtp_layers = 1;
  rope96.training.global_batch = 21;
  const auto mtp = export_plan(parse_release("megatron"), singles, rope96, odd);
  REQUIRE_FALSE(mtp.refusal.has_value());
  CHECK(has(mtp.text, "|t*4|tmL\""));
  CHECK(rules(parse_release("megatron"), mtp.text, rope96, odd) == "");
  // Two MTP layers, interleaved: 61 layers over PP 8 (7 | 8 x 6 | 6) with VP 2. The MTP layers
  // count in the last stage's chunks (6 + 2 = 8: 4 and 2 + mm) and stay in its last; the first
  // stage 3 + 4, the middles 4 + 4. "Et*3", 14 x "|t*4", "|t*2mmL": 3 + 56 + 2 = 61.
  Model mtp2 = llama8b();
  mtp2.layers = 61;
  mtp2.mtp_layers = 2;
  mtp2.training.global_batch = 8;
  ParallelConfig eight_v = one_pipeline(8, 2);
  std::string mtp_rounds = "Et*3";
  for (int i = 0; i < 14; ++i) mtp_rounds += "|t*4";
  mtp_rounds += "|t*2mmL";
  const auto mtp_v = export_plan(parse_release("megatron"), cluster_of_singles(8), mtp2, eight_v);
  REQUIRE_FALSE(mtp_v.refusal.has_value());
  CHECK(has(mtp_v.text, ("\"" + mtp_rounds + "\"").c_str()));
  CHECK(rules(parse_release("megatron"), mtp_v.text, mtp2, eight_v) == "");
  // PP 16 (3 | 4 x 14 | 2), VP 4: the last stage's 2 + 2 in chunks of 1, 1, 0 and the two MTP
  // layers together, longer than the plan's chunk of 1 where they alone are; the first
  // stage's 3 in its last three chunks ("E|t|..."). Round 2 ends in the last stage's empty
  // chunk, round 3 starts with the first stage's "t": "t||t"; round 3 ends "|t|mmL".
  mtp2.training.global_batch = 16;
  eight_v.pp = 16;
  eight_v.virtual_stages = 4;
  const auto mtp_alone =
      export_plan(parse_release("megatron"), cluster_of_singles(16), mtp2, eight_v);
  REQUIRE_FALSE(mtp_alone.refusal.has_value());
  CHECK(has(mtp_alone.text, "\"E|t|t|"));
  CHECK(has(mtp_alone.text, "|t|t||t|t|"));
  CHECK(has(mtp_alone.text, "|t|mmL\""));
  CHECK(rules(parse_release("megatron"), mtp_alone.text, mtp2, eight_v) == "");
}

TEST_CASE("what a plan was priced with is written: dropout, the FP8 recipe; MTP refused",
          "[export]") {
  const Cluster cluster = cluster_of(4);
  const ParallelConfig c = config_of({2, 1, 1}, 1, Recompute::none, true);
  // pretrain_gpt.py and the Hydra file default dropout to 0.1: the model's is written.
  Model m = llama8b();
  const auto mlm = export_plan(parse_release("megatron"), cluster, m, c);
  CHECK(mlm.text.find("  --attention-dropout 0 \\\n  --hidden-dropout 0 \\\n") !=
        std::string::npos);
  m.dropout = 0.1;
  const auto hydra = export_plan(parse_release("nemo-hydra"), cluster, m, c);
  CHECK(hydra.text.find("  attention_dropout: 0.1\n  hidden_dropout: 0.1\n") != std::string::npos);
  // FP8 current scaling: NeMo 2's plugin by recipe; the Hydra file has delayed scaling only.
  Model fp8 = llama8b();
  fp8.training.dtype = Dtype::fp8;
  fp8.training.fp8.recipe = Fp8Recipe::current;
  const auto nemo = export_plan(parse_release("nemo"), cluster, fp8, c);
  REQUIRE_FALSE(nemo.refusal.has_value());
  CHECK(nemo.text.find("recipe.trainer.plugins = bf16_with_fp8_current_scaling_mixed()\n") !=
        std::string::npos);
  // That plugin keeps the first and last layers in BF16 (first_last_layers_bf16 True); the plan
  // priced every layer in FP8, as NeMo's performance scripts run it: turned off.
  CHECK(has(nemo.text, "recipe.trainer.plugins.first_last_layers_bf16 = False\n"));
  // Every FP8 plugin sets fp8_param_gather (True but blockwise's): the plan's params decide.
  CHECK(has(nemo.text, "recipe.trainer.plugins.fp8_param_gather = False\n"));
  CHECK(rules(parse_release("nemo"), nemo.text, fp8, c) == "");
  Model fp8_params = fp8;
  fp8_params.training.fp8.params = true;
  CHECK(has(export_plan(parse_release("nemo"), cluster, fp8_params, c).text,
            "recipe.trainer.plugins.fp8_param_gather = True\n"));
  // The Hydra file (delayed scaling): model.fp8_params from the same key.
  fp8_params.training.fp8.recipe = Fp8Recipe::delayed;
  const auto hydra_params = export_plan(parse_release("nemo-hydra"), cluster, fp8_params, c);
  CHECK(has(hydra_params.text, "  fp8_params: true\n"));
  CHECK(rules(parse_release("nemo-hydra"), hydra_params.text, fp8_params, c) == "");
  fp8.training.fp8.recipe = Fp8Recipe::delayed;  // bf16_with_fp8_mixed has no BF16 layers
  CHECK_FALSE(has(export_plan(parse_release("nemo"), cluster, fp8, c).text, "first_last"));
  fp8.training.fp8.recipe = Fp8Recipe::blockwise;
  CHECK(export_plan(parse_release("nemo"), cluster, fp8, c)
            .text.find("bf16_with_fp8_subchannel_scaling_mixed()") != std::string::npos);
  const auto refused = export_plan(parse_release("nemo-hydra"), cluster, fp8, c);
  REQUIRE(refused.refusal.has_value());
  CHECK(refused.refusal->reason.kind == RefusalKind::fp8_recipe);
  // torchtitan's rowwise recipe has no float8 all-gather: written without it, as the plan
  // prices its FP8 parameters (16-bit gathers: Stack::gathers_fp8_params_in_16_bits).
  Model rowwise_params = fp8;
  rowwise_params.training.fp8.params = true;
  const auto rowwise = export_plan(parse_release("torchtitan"), cluster, rowwise_params, c);
  CHECK((!rowwise.refusal.has_value() || rowwise.refusal->reason.kind != RefusalKind::fp8_recipe));
  CHECK(stack_preset("torchtitan").gathers_fp8_params_in_16_bits(rowwise_params.training, 8));
  // A plan priced with 8-bit gathers (megatron-core's blockwise) says the launch gathers 16 bits
  // (a review's find: it was written silently).
  const ParallelConfig sharded = config_of({2, 1, 1}, 3, Recompute::none, true);
  const auto rowwise_sharded =
      export_plan(parse_release("torchtitan"), cluster, rowwise_params, sharded);
  REQUIRE_FALSE(rowwise_sharded.refusal.has_value());
  CHECK(has(rowwise_sharded.text,
            "# FP8 weights (training.fp8.params) gather in 16 bits under rowwise scaling: "
            "torchao's float8 all-gather is tensorwise's (--stack torchtitan prices them so)\n"
            "recipe_name = \"rowwise\"\n"));
  rowwise_params.training.fp8.recipe = Fp8Recipe::current;
  CHECK_FALSE(stack_preset("torchtitan").gathers_fp8_params_in_16_bits(rowwise_params.training, 8));
  // Tensorwise with the FP8 all-gather: no recipe_name, which torchtitan asserts against beside
  // it (float8.py L65-69 @v0.2.2); the output layer filtered out, 16-bit as priced.
  const ParallelConfig fsdp = config_of({2, 1, 1}, 3, Recompute::none, true);
  const auto tensorwise = export_plan(parse_release("torchtitan"), cluster, rowwise_params, fsdp);
  REQUIRE_FALSE(tensorwise.refusal.has_value());
  CHECK(has(tensorwise.text, "enable_fsdp_float8_all_gather = true\n"));
  CHECK_FALSE(has(tensorwise.text, "recipe_name ="));
  CHECK(has(tensorwise.text, "filter_fqns = [\"output\"]\n"));
  CHECK(rules(parse_release("torchtitan"), tensorwise.text, rowwise_params, fsdp) == "");
  rowwise_params.training.fp8.params = false;  // current scaling without FP8 weights: named
  const auto named = export_plan(parse_release("torchtitan"), cluster, rowwise_params, fsdp);
  CHECK(has(named.text, "recipe_name = \"tensorwise\"\nfilter_fqns = [\"output\"]\n"));
  CHECK(rules(parse_release("torchtitan"), named.text, rowwise_params, fsdp) == "");
  // MXFP8: NeMo's bf16_with_mxfp8_mixed, Megatron-LM's --fp8-recipe mxfp8; torchtitan's float8
  // converter has no MX recipe (its MX converter is not priced): refused, as by nemo-hydra.
  fp8.training.fp8.recipe = Fp8Recipe::mxfp8;
  const auto mx = export_plan(parse_release("nemo"), cluster, fp8, c);
  CHECK(has(mx.text, "recipe.trainer.plugins = bf16_with_mxfp8_mixed()\n"));
  CHECK(rules(parse_release("nemo"), mx.text, fp8, c) == "");
  const auto mx_mlm = export_plan(parse_release("megatron"), cluster, fp8, c);
  CHECK(has(mx_mlm.text, "--fp8-recipe mxfp8"));
  CHECK(rules(parse_release("megatron"), mx_mlm.text, fp8, c) == "");
  for (const char* other : {"nemo-hydra", "torchtitan"}) {
    const auto no_mx = export_plan(parse_release(other), cluster, fp8, c);
    REQUIRE(no_mx.refusal.has_value());
    CHECK(no_mx.refusal->reason.kind == RefusalKind::fp8_recipe);
  }
  // Multi-token prediction layers: Megatron-LM writes them (--mtp-num-layers), no other target.
  Model mtp = llama8b();
  mtp.mtp_layers = 1;
  const auto mtp_mlm = export_plan(parse_release("megatron"), cluster, mtp, c);
  REQUIRE_FALSE(mtp_mlm.refusal.has_value());
  CHECK(mtp_mlm.text.find("  --mtp-num-layers 1 \\\n") != std::string::npos);
  CHECK(rules(parse_release("megatron"), mtp_mlm.text, mtp, c) == "");
  for (const char* target : {"nemo", "nemo-hydra", "deepspeed", "torchtitan"}) {
    const auto e = export_plan(parse_release(target), cluster, mtp, c);
    REQUIRE(e.refusal.has_value());
    CHECK(e.refusal->reason.kind == RefusalKind::mtp_layers);
  }
  // Megatron-LM runs MTP with RoPE (or no) positions only (arguments.py L856-860).
  mtp.learned_positions = true;
  const auto learned = export_plan(parse_release("megatron"), cluster, mtp, c);
  REQUIRE(learned.refusal.has_value());
  CHECK(learned.refusal->reason.kind == RefusalKind::mtp_positions);
  // FP8 attention: priced where the stack runs it (cuDNN). Megatron-LM core_v0.19.0 keeps
  // fp8_dot_product_attention out of its flags (arguments.py L2250); NeMo's plugin sets it,
  // which its core_r0.13.0 hands to delayed scaling only (TEDelayedScaling fp8_dpa).
  Model fp8_attention = llama8b();
  fp8_attention.training.dtype = Dtype::fp8;
  fp8_attention.training.fp8.recipe = Fp8Recipe::delayed;
  fp8_attention.training.fp8.attention = true;
  for (const char* target : {"megatron", "nemo-hydra", "deepspeed", "torchtitan"}) {
    const auto e = export_plan(parse_release(target), cluster, fp8_attention, c);
    REQUIRE(e.refusal.has_value());
    CHECK(e.refusal->reason.kind == RefusalKind::fp8_attention);
  }
  const auto nemo_dpa = export_plan(parse_release("nemo"), cluster, fp8_attention, c);
  REQUIRE_FALSE(nemo_dpa.refusal.has_value());
  CHECK(has(nemo_dpa.text, "recipe.trainer.plugins = bf16_with_fp8_mixed()\n"));
  CHECK(has(nemo_dpa.text, "recipe.trainer.plugins.fp8_dot_product_attention = True\n"));
  CHECK(rules(parse_release("nemo"), nemo_dpa.text, fp8_attention, c) == "");
  fp8_attention.training.fp8.recipe = Fp8Recipe::current;
  const auto nemo_cs = export_plan(parse_release("nemo"), cluster, fp8_attention, c);
  REQUIRE(nemo_cs.refusal.has_value());
  CHECK(nemo_cs.refusal->reason.kind == RefusalKind::fp8_attention);
  fp8_attention.training.fp8.attention = false;  // no FP8 attention: not written
  CHECK_FALSE(has(export_plan(parse_release("nemo"), cluster, fp8_attention, c).text,
                  "fp8_dot_product_attention"));
}

TEST_CASE(
    "launch checks against the frameworks' own code: fp16 O2, device connections, "
    "pipeline partition",
    "[export]") {
  const Cluster cluster = cluster_of(4);
  Model fp16 = llama8b();
  fp16.training.dtype = Dtype::fp16;
  // NeMo Hydra: O2 in fp16 needs the distributed Adam; fused_adam raises "fp16 training is not
  // yet supported with O2" (megatron_base_model.py L870-881 @v2.4.0): ZeRO-0 refused, ZeRO-1
  // the nearest (O2 with distributed_fused_adam).
  const auto zero0 = export_plan(parse_release("nemo-hydra"), cluster, fp16,
                                 config_of({2, 1, 1}, 0, Recompute::none, true));
  REQUIRE(zero0.refusal.has_value());
  CHECK(zero0.refusal->reason.kind == RefusalKind::fp16_unsharded);
  REQUIRE(zero0.refusal->nearest.has_value());
  CHECK(zero0.refusal->nearest->zero == 1);
  const auto zero1 = export_plan(parse_release("nemo-hydra"), cluster, fp16,
                                 config_of({2, 1, 1}, 1, Recompute::none, true));
  REQUIRE_FALSE(zero1.refusal.has_value());
  CHECK(has(zero1.text, "  megatron_amp_O2: true\n"));
  // One device connection with TP before Blackwell only (arguments.py L1413-1415
  // @core_v0.19.0); a capability of 0 (unknown) keeps Hopper's rule.
  const ParallelConfig tp2 = config_of({2, 1, 1}, 1, Recompute::none, true);
  Cluster hopper = cluster;
  hopper.gpu.compute_capability = 9.0;
  Cluster blackwell = cluster;
  blackwell.gpu.compute_capability = 10.0;
  for (const char* target : {"megatron", "nemo", "nemo-hydra"}) {
    INFO(target);
    CHECK(has(export_plan(parse_release(target), hopper, llama8b(), tp2).text,
              "CUDA_DEVICE_MAX_CONNECTIONS"));
    CHECK(has(export_plan(parse_release(target), cluster, llama8b(), tp2).text,
              "CUDA_DEVICE_MAX_CONNECTIONS"));
    CHECK_FALSE(has(export_plan(parse_release(target), blackwell, llama8b(), tp2).text,
                    "CUDA_DEVICE_MAX_CONNECTIONS=1"));
  }
  // ... where NeMo's callback asks for 32 with TP or CP (megatron_comm_overlap.py L224-234).
  CHECK(has(export_plan(parse_release("nemo"), blackwell, llama8b(), tp2).text,
            "env_vars={\"CUDA_DEVICE_MAX_CONNECTIONS\": \"32\"}"));
  CHECK_FALSE(has(export_plan(parse_release("megatron"), blackwell, llama8b(), tp2).text,
                  "CUDA_DEVICE_MAX_CONNECTIONS"));
  // DeepSpeed's PipelineModule: 'type:' balances the transformer layers (32 over 4: 8 each);
  // the default, 'parameters', would move layers off the stages holding the embedding and
  // output layer (runtime/pipe/module.py L396-417 @v0.19.5).
  const auto piped = export_plan(parse_release("deepspeed"), cluster, llama8b(),
                                 config_of({1, 4, 1}, 1, Recompute::none, false));
  REQUIRE_FALSE(piped.refusal.has_value());
  CHECK(has(piped.text,
            "PipelineModule(layers, num_stages=4, partition_method=\"type:"
            "TRANSFORMER_LAYER_CLASS\": 8 layers a stage"));
  // 30 layers over 4: 7 | 8 | 8 | 7, the embedding and output layer counted as layers (32 over
  // 4, BLOOM's 'type:transformer|embedding').
  Model thirty = llama8b();
  thirty.layers = 30;
  thirty.training.global_batch = 256;
  const auto bloom = export_plan(parse_release("deepspeed"), cluster, thirty,
                                 config_of({1, 4, 1}, 1, Recompute::none, false));
  REQUIRE_FALSE(bloom.refusal.has_value());
  CHECK(has(bloom.text,
            "TRANSFORMER_LAYER_CLASS|EMBEDDING_CLASS\" (the embedding and output "
            "layer count as layers, as BLOOM's): 7 | 8 x 2 | 7 transformer layers"));
  // 29 over 4 (7 | 8 | 8 | 6 priced: no partition writes it): said, not hidden.
  thirty.layers = 29;
  const auto odd = export_plan(parse_release("deepspeed"), cluster, thirty,
                               config_of({1, 4, 1}, 1, Recompute::none, false));
  REQUIRE_FALSE(odd.refusal.has_value());
  CHECK(has(odd.text, "no partition_method writes that split exactly"));
}

TEST_CASE(
    "a plan placed tp-pp-dp: the mapping switch, or refused where the mesh puts PP "
    "outermost",
    "[export]") {
  const Cluster cluster = cluster_of(4);
  const ParallelConfig c = config_of({2, 4, 1}, 1, Recompute::none, true);
  const auto order = RankOrder::tp_pp_dp;
  const auto emit = [&](const char* target, const ParallelConfig& config) {
    return export_plan(parse_release(target), cluster, llama8b(), config, SelectiveKind::attention,
                       CpKind::p2p, {}, order);
  };
  // Megatron-Core's 'tp-pp-dp' order (parallel_state.py L280-298 @core_v0.19.0).
  const auto mlm = emit("megatron", c);
  REQUIRE_FALSE(mlm.refusal.has_value());
  CHECK(has(mlm.text, "  --use-tp-pp-dp-mapping \\\n"));
  CHECK(rules(parse_release("megatron"), mlm.text, llama8b(), c) == "");
  CHECK_FALSE(has(export_plan(parse_release("megatron"), cluster, llama8b(), c).text,
                  "mapping"));  // tp-dp-pp, the default, writes nothing
  const auto nemo = emit("nemo", c);
  REQUIRE_FALSE(nemo.refusal.has_value());
  CHECK(has(nemo.text, "recipe.trainer.strategy.use_tp_pp_dp_mapping = True\n"));
  CHECK(rules(parse_release("nemo"), nemo.text, llama8b(), c) == "");
  const auto hydra = emit("nemo-hydra", c);
  REQUIRE_FALSE(hydra.refusal.has_value());
  CHECK(has(hydra.text, "  use_tp_pp_dp_mapping: true\n"));
  CHECK(rules(parse_release("nemo-hydra"), hydra.text, llama8b(), c) == "");
  // DeepSpeed's PipeModelDataParallelTopology and torchtitan's mesh put PP outermost.
  const auto deepspeed = emit("deepspeed", config_of({1, 4, 1}, 1, Recompute::none, false));
  REQUIRE(deepspeed.refusal.has_value());
  CHECK(deepspeed.refusal->reason.kind == RefusalKind::rank_order);
  const auto titan = emit("torchtitan", config_of({2, 4, 1}, 3, Recompute::none, true));
  REQUIRE(titan.refusal.has_value());
  CHECK(titan.refusal->reason.kind == RefusalKind::rank_order);
}

TEST_CASE("RoPE's base and Q/K norm are written: Megatron's defaults are another model",
          "[export]") {
  // --rotary-base defaults to 10000 (arguments.py L2335 @core_v0.19.0); Llama 3 trains with
  // 500000. Qwen3's per-head Q/K norm is --qk-layernorm.
  const Cluster cluster = cluster_of(4);
  const ParallelConfig c = config_of({2, 1, 1}, 1, Recompute::none, true);
  Model m = llama8b();
  m.rope_base = 500000;
  const auto mlm = export_plan(parse_release("megatron"), cluster, m, c);
  CHECK(has(mlm.text, "  --rotary-base 500000 \\\n"));
  CHECK_FALSE(has(mlm.text, "--qk-layernorm"));
  CHECK(rules(parse_release("megatron"), mlm.text, m, c) == "");
  const auto hydra = export_plan(parse_release("nemo-hydra"), cluster, m, c);
  CHECK(has(hydra.text, "  rotary_base: 500000\n"));
  CHECK(rules(parse_release("nemo-hydra"), hydra.text, m, c) == "");
  CHECK_FALSE(has(hydra.text, "qk_layernorm"));
  m.qk_layernorm = true;
  CHECK(has(export_plan(parse_release("megatron"), cluster, m, c).text, "  --qk-layernorm \\\n"));
  // The Hydra file's default spec (te_gpt) builds no Q/K norms; the decoder-block spec does.
  const auto hydra_qk = export_plan(parse_release("nemo-hydra"), cluster, m, c);
  CHECK(has(hydra_qk.text, "  name: decoder_block_gpt\n  qk_layernorm: true\n"));
  CHECK(rules(parse_release("nemo-hydra"), hydra_qk.text, m, c) == "");
  // torchtitan's Llama 3 flavors have none: no flavor is this model.
  const auto titan_qk = export_plan(parse_release("torchtitan"), cluster, m,
                                    config_of({2, 1, 1}, 3, Recompute::none, true));
  REQUIRE(titan_qk.refusal.has_value());
  CHECK(titan_qk.refusal->reason.kind == RefusalKind::model_shape);
  // NeMo 2.0: the recipe's config takes the model's norm and base (Llama 3 8B's has neither
  // the norm nor, for a model file that says so, 500000).
  const auto nemo_qk = export_plan(parse_release("nemo"), cluster, m, c);
  REQUIRE_FALSE(nemo_qk.refusal.has_value());
  CHECK(has(nemo_qk.text,
            "recipe.model.config.rotary_base = 500000\n"
            "recipe.model.config.qk_layernorm = True\n"));
  CHECK(rules(parse_release("nemo"), nemo_qk.text, m, c) == "");
  Model base10k = llama8b();
  base10k.rope_base = 10000;
  CHECK(has(export_plan(parse_release("nemo"), cluster, base10k, c).text,
            "recipe.model.config.rotary_base = 10000\nrecipe.model.config.qk_layernorm = False\n"));
  // torchtitan: every flavor's base is 500000, and none has dropout.
  const ParallelConfig fsdp = config_of({2, 1, 1}, 3, Recompute::none, true);
  CHECK(export_plan(parse_release("torchtitan"), cluster, base10k, fsdp).refusal->reason.kind ==
        RefusalKind::model_shape);
  Model dropout = llama8b();
  dropout.dropout = 0.1;
  CHECK(export_plan(parse_release("torchtitan"), cluster, dropout, fsdp).refusal->reason.kind ==
        RefusalKind::model_shape);
  CHECK_FALSE(export_plan(parse_release("torchtitan"), cluster, llama8b(), fsdp).refusal);
  CHECK(has(export_plan(parse_release("deepspeed"), cluster, m,
                        config_of({1, 1, 1}, 1, Recompute::none, false))
                .text,
            "RoPE (base 500000), Q/K norm"));
  // Learned positions: no base written.
  CHECK_FALSE(
      has(export_plan(parse_release("megatron"), cluster, gpt_style(), c).text, "--rotary-base"));
}

TEST_CASE(
    "the output layer's deferred weight gradients: NeMo's callback and Megatron-LM's flags "
    "write them, nemo-hydra says they run in each backward",
    "[export]") {
  const Cluster cluster = cluster_of(4);
  const Model m = llama8b();
  // As stack_switches passes a stack with defer_output_wgrad and limit 22 on TP2 PP4.
  const StackSwitches deferred{.defer_output_wgrad = true, .output_wgrad_deferral_limit = 22};
  const ParallelConfig pp4 = config_of({2, 4, 1}, 1, Recompute::none, true);
  const std::string nemo = emitted(parse_release("nemo"), cluster, m, pp4, deferred);
  CHECK(has(nemo, ", defer_embedding_wgrad_compute=True, wgrad_deferral_limit=22"));
  const std::string mlm = emitted(parse_release("megatron"), cluster, m, pp4, deferred);
  CHECK(has(mlm, "  --defer-embedding-wgrad-compute \\\n"));
  CHECK(has(mlm, "  --wgrad-deferral-limit 22 \\\n"));
  // nemo-hydra (PP 4, no interleaving): NeMo's ModelParallelConfig refuses the deferral without
  // gradient_accumulation_fusion, which the file leaves off: said, not written.
  const std::string hydra = emitted(parse_release("nemo-hydra"), cluster, m, pp4, deferred);
  CHECK(has(hydra,
            "# the plan was priced with the output layer's weight gradients of its first "
            "22 calls deferred to the pipeline's flush"));
  CHECK_FALSE(has(hydra, "defer_embedding_wgrad_compute"));
  // Not deferred: neither written nor said.
  CHECK_FALSE(has(emitted(parse_release("nemo"), cluster, m, pp4, {}), "defer"));
  CHECK_FALSE(has(emitted(parse_release("megatron"), cluster, m, pp4, {}), "defer"));
  // stack_switches passes it only with a pipeline (Megatron-Core refuses it at PP 1).
  Stack stack = stack_preset("megatron-core-perf");
  stack.defer_output_wgrad = true;
  stack.output_wgrad_deferral_limit = 22;
  CHECK(stack_switches(stack, false, Dtype::bf16, pp4).defer_output_wgrad);
  const ParallelConfig flat = config_of({2, 1, 1}, 1, Recompute::none, true);
  CHECK_FALSE(stack_switches(stack, false, Dtype::bf16, flat).defer_output_wgrad);
}

TEST_CASE(
    "a review's launches that would not start: FSDP with FP8 or userbuffers under NeMo 1.x, "
    "Megatron-FSDP without its overlaps, squared ReLU and bias-free GELU with the bias "
    "fusion",
    "[export]") {
  const Cluster cluster = cluster_of(8);
  const Release& hydra = parse_release("nemo-hydra");
  const Release& nemo = parse_release("nemo");
  const Release& mlm = parse_release("megatron");
  auto run = [&](const Release& r, const Model& m, const ParallelConfig& c,
                 const StackSwitches& s) {
    return export_plan(r, cluster, m, c, SelectiveKind::attention, CpKind::p2p, s);
  };
  // FP8 at ZeRO-3 under nemo-hydra: torch FSDP, which NeMo 1.x refuses with FP8; the nearest
  // plan is ZeRO-2's distributed Adam, which emits and passes.
  Model fp8 = llama8b();
  fp8.training.dtype = Dtype::fp8;
  const ParallelConfig zero3 = config_of({1, 1, 64}, 3, Recompute::none, false);
  const Export refused = run(hydra, fp8, zero3, {});
  REQUIRE(refused.refusal.has_value());
  CHECK(refused.refusal->reason.kind == RefusalKind::fp8_fsdp);
  REQUIRE(refused.refusal->nearest.has_value());
  CHECK(refused.refusal->nearest->zero == 2);
  CHECK(emitted(hydra, cluster, fp8, *refused.refusal->nearest, {}) != "");
  // Userbuffers priced at ZeRO-3 (TP 8 with SP): NeMo 1.x turns them off under FSDP; not
  // written, and said.
  const ParallelConfig tp8 = config_of({8, 1, 8}, 3, Recompute::none, true);
  const StackSwitches ub{.tp_userbuffers = true};
  const std::string fsdp_ub = emitted(hydra, cluster, llama8b(), tp8, ub);
  CHECK_FALSE(has(fsdp_ub, "ub_tp_comm_overlap"));
  CHECK(has(fsdp_ub, "NeMo 1.x turns them off under torch FSDP"));
  // Megatron-FSDP under nemo: both overlaps written on at ZeRO-3 whatever the stack priced (its
  // asserts), said where the plan had them exposed; at DP 1 too, where the callback would
  // leave them off.
  const StackSwitches exposed_dp{.dp_overlap_grad_reduce = false};
  const std::string mfsdp = emitted(nemo, cluster, llama8b(), zero3, exposed_dp);
  CHECK(has(mfsdp, ", overlap_grad_reduce=True, overlap_param_gather=True"));
  CHECK(has(mfsdp, "# DP: Megatron-FSDP asserts its overlaps"));
  const ParallelConfig dp1 = config_of({8, 1, 1}, 3, Recompute::none, true);
  CHECK(has(emitted(nemo, cluster, llama8b(), dp1, {}),
            ", overlap_grad_reduce=True, overlap_param_gather=True"));
  const ParallelConfig zero2 = config_of({1, 1, 64}, 2, Recompute::none, false);
  CHECK(has(emitted(nemo, cluster, llama8b(), zero2, exposed_dp), ", overlap_grad_reduce=True"));
  // The activations TransformerConfig refuses with the bias fused into them.
  Model relu2 = llama8b();
  relu2.ffn = FfnKind::relu2;
  const ParallelConfig plain = config_of({1, 1, 64}, 1, Recompute::none, false);
  CHECK(has(emitted(hydra, cluster, relu2, plain, {}), "  bias_activation_fusion: false\n"));
  relu2.bias = true;
  CHECK(has(emitted(mlm, cluster, relu2, plain, {}), "  --no-bias-gelu-fusion \\\n"));
  Model gelu = gpt_style();
  gelu.bias = false;
  CHECK(has(emitted(hydra, cluster, gelu, plain, {}), "  bias_activation_fusion: false\n"));
  CHECK_FALSE(has(emitted(hydra, cluster, gpt_style(), plain, {}), "bias_activation_fusion"));
  CHECK_FALSE(has(emitted(mlm, cluster, llama8b(), plain, {}), "--no-bias-gelu-fusion"));
}
