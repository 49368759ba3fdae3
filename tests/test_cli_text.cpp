// cli/report_text.h: the one thousands separator and the one CSV quoting of the reporters;
// cli/option_text.h: the planner's option problems worded with their flags; cli/failure_text.h
// and cli/whatif_text.h: failures and the what-if's options in words; cli/search_text.h: why a
// plan does not fit, the rules no split obeyed; cli/emit_text.h: --emit refusals.
#include <catch2/catch.hpp>
#include <string>

#include "cli/calibration_checks.h"
#include "cli/emit_text.h"
#include "cli/failure_text.h"
#include "cli/option_text.h"
#include "cli/plan_checks.h"
#include "cli/report_text.h"
#include "cli/search_text.h"
#include "cli/whatif_text.h"
#include "costmodel/calibration.h"
#include "costmodel/stack.h"
#include "planner/option_check.h"
#include "topology/cluster_loader.h"
#include "topology/errors.h"

using trident::cli::csv_quoted;
using trident::cli::group_thousands;
using trident::cli::thousands;
using namespace trident;

TEST_CASE("a measured error prints as the band uses it, one decimal where it has one",
          "[cli_text]") {
  CHECK(trident::cli::error_percent(0.059) == "5.9%");
  CHECK(trident::cli::error_percent(0.045) == "4.5%");  // was "4%": the band is +/-4.5%
  CHECK(trident::cli::error_percent(0.06) == "6%");
  CHECK(trident::cli::error_percent(0.171) == "17.1%");
  CHECK(trident::cli::error_percent(0.0004) == "0%");
}

TEST_CASE("thousands: a comma every three digits from the right, sign kept", "[report_text]") {
  CHECK(group_thousands("") == "");
  CHECK(group_thousands("7") == "7");
  CHECK(group_thousands("999") == "999");
  CHECK(group_thousands("1000") == "1,000");
  CHECK(group_thousands("-1000") == "-1,000");  // no comma right after the sign
  CHECK(group_thousands("-100") == "-100");
  CHECK(group_thousands("123456") == "123,456");
  CHECK(group_thousands("-1234567") == "-1,234,567");
  // Doubles are rounded to an integer first: 1234567.5 -> 1234568 (round half to even of
  // the exactly representable .5 gives 1234568), 999.4 -> 999, 999.6 -> 1000.
  CHECK(thousands(1234567.5) == "1,234,568");
  CHECK(thousands(999.4) == "999");
  CHECK(thousands(999.6) == "1,000");
  CHECK(thousands(-2500000.0) == "-2,500,000");
  // Integers are exact past 2^53 (9007199254740993 is not a double).
  CHECK(thousands(9007199254740993LL) == "9,007,199,254,740,993");
  CHECK(thousands(512) == "512");
  CHECK(thousands(-4096) == "-4,096");
}

TEST_CASE("csv_quoted: RFC 4180 field, embedded quotes doubled", "[report_text]") {
  CHECK(csv_quoted("") == "\"\"");
  CHECK(csv_quoted("plain") == "\"plain\"");
  CHECK(csv_quoted("a, b") == "\"a, b\"");  // the comma stays inside the quotes
  // say "hi" -> "say ""hi""" : the two embedded quotes doubled, one pair around the field.
  CHECK(csv_quoted("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_quoted("\"") == "\"\"\"\"");
  CHECK(csv_quoted("two\nlines") == "\"two\nlines\"");
}

TEST_CASE("the planner's option problems in words, with their flags", "[cli_text]") {
  Model model;
  model.name = "m";
  model.heads = 4;
  model.kv_heads = 2;
  model.layers = 4;
  model.ffn_hidden = 256;
  const Stack core = stack_preset("megatron-core");
  const Stack old = stack_preset("megatron-2021");
  using P = OptionProblem;
  CHECK(cli::describe(P{Knob::tp, OptionIssue::not_dividing_heads, 3, 0}, model, core) ==
        "--tp 3: must divide the model's heads (4), kv_heads (2) and ffn_hidden (256)");
  CHECK(cli::describe(P{Knob::min_tp, OptionIssue::above_largest_tp, 4, 2}, model, core) ==
        "--min-tp 4: the largest TP model m takes is 2 (TP divides its heads 4, kv_heads 2 and "
        "ffn_hidden 256)");
  CHECK(cli::describe(P{Knob::min_ep, OptionIssue::no_experts, 2, 0}, model, core) ==
        "--min-ep 2: model m has no experts (no moe: in its file)");
  CHECK(
      cli::describe(P{Knob::min_cp, OptionIssue::stack_lacks, 2, 0}, model, stack_preset("fsdp")) ==
      "--min-cp 2: stack fsdp has no context parallelism; drop --min-cp or use --stack "
      "megatron-core");
  CHECK(cli::describe(P{Knob::pp, OptionIssue::not_dividing_layers, 3, 0}, model, old) ==
        "--pp 3: must divide the model's layers (4) under stack megatron-2021, which has no "
        "uneven pipeline stages");
  CHECK(cli::describe(P{Knob::pp, OptionIssue::more_than_layers, 5, 0}, model, core) ==
        "--pp 5: more stages than the model's 4 layers");
  CHECK(cli::describe(P{Knob::min_tp, OptionIssue::min_above_max, 4, 2}, model, core) ==
        "--min-tp 4 is above --max-tp 2");
  CHECK(cli::describe(P{Knob::micro_batch, OptionIssue::not_positive, 0, 0}, model, core) ==
        "--micro-batch 0: expected a positive integer");
  CHECK(cli::describe(P{Knob::zero, OptionIssue::out_of_range, 4, 0}, model, core) ==
        "--zero 4: expected 0, 1, 2 or 3");
  CHECK(cli::describe(P{Knob::zero, OptionIssue::stack_lacks_with_pp, 3, 2}, model, core) ==
        "--zero 3 with --pp 2: stack megatron-core does not combine ZeRO-3 with pipeline "
        "parallelism; use another --zero, --pp 1 or another --stack");
  CHECK(cli::describe(P{Knob::zero, OptionIssue::stack_lacks, 1, 0}, model, old) ==
        "--zero 1: stack megatron-2021 does not run ZeRO-1");
  CHECK(cli::describe(P{Knob::recompute, OptionIssue::stack_lacks,
                        static_cast<long long>(Recompute::selective), 0},
                      model, old) ==
        "--recompute selective: stack megatron-2021 has no selective recompute");
  Stack up = core;
  up.name = "nemo-2504-moe-mla-up";
  up.selective = SelectiveKind::mla_up_proj;
  CHECK(cli::describe(P{Knob::recompute, OptionIssue::selective_needs_mla,
                        static_cast<long long>(Recompute::selective), 0},
                      model, up) ==
        "--recompute selective: stack nemo-2504-moe-mla-up recomputes multi-latent attention's "
        "up-projections (selective: mla_up_proj) and model m has no MLA; use --recompute "
        "none|full or another --stack");
  CHECK(cli::describe(P{Knob::sequence_parallel, OptionIssue::stack_lacks, 1, 0}, model, old) ==
        "--sequence-parallel on: stack megatron-2021 has no sequence parallelism");
  CHECK(cli::describe(P{Knob::vp, OptionIssue::stack_lacks, 2, 0}, model, stack_preset("fsdp")) ==
        "--vp 2: stack fsdp has no interleaved pipeline schedule");
  CHECK(cli::describe(P{Knob::fp8_recipe, OptionIssue::stack_lacks,
                        static_cast<long long>(Fp8Recipe::delayed), 0},
                      model, old) ==
        "model m: training.fp8.recipe delayed: stack megatron-2021 has no FP8 training");
  CHECK(cli::describe(P{Knob::global_batch, OptionIssue::missing, 0, 0}, model, core) ==
        "global batch: not given (set training.global_batch in the model or pass --global-batch "
        "N)");
}

TEST_CASE("context and expert parallel option problems in words", "[cli_text]") {
  Model model;
  model.name = "m";
  const Stack core = stack_preset("megatron-core");
  const Stack old = stack_preset("megatron-2021");
  using P = OptionProblem;
  CHECK(cli::describe(P{Knob::cp, OptionIssue::stack_lacks, 2, 0}, model, old) ==
        "--cp 2: stack megatron-2021 has no context parallelism; use --cp 1 or --stack "
        "megatron-core");
  CHECK(cli::describe(P{Knob::cp, OptionIssue::not_dividing_sequence, 3, 8192}, model, core) ==
        "--cp 3: 2 x cp must divide the sequence length 8192 (causal load balancing: 2 cp chunks)");
  CHECK(cli::describe(P{Knob::min_cp, OptionIssue::min_above_max, 4, 2}, model, core) ==
        "--min-cp 4 is above --max-cp 2");
  CHECK(cli::describe(P{Knob::min_ep, OptionIssue::min_above_max, 4, 2}, model, core) ==
        "--min-ep 4 is above --max-ep 2");
  CHECK(cli::describe(P{Knob::ep, OptionIssue::no_experts, 2, 0}, model, core) ==
        "--ep 2: model m has no experts (no moe: in its file)");
  CHECK(cli::describe(P{Knob::ep, OptionIssue::not_dividing_experts, 16, 8}, model, core) ==
        "--ep 16: must divide the model's 8 experts");
  CHECK(cli::describe(P{Knob::ep, OptionIssue::stack_lacks, 2, 0}, model, old) ==
        "--ep 2: stack megatron-2021 has no expert parallelism; use --ep 1 or --stack "
        "megatron-core");
  CHECK(cli::describe(P{Knob::zero, OptionIssue::moe_zero3, 3, 0}, model, core) ==
        "--zero 3: MoE models are planned with ZeRO 0-2 (sharding experts per unit is not "
        "modelled)");
  CHECK(cli::describe(P{Knob::max_ep, OptionIssue::not_positive, -1, 0}, model, core) ==
        "--max-ep -1: expected a positive integer");
}

TEST_CASE("failures in words", "[cli_text]") {
  Cluster h100 = cluster_preset("dgx-h100");  // 8 x H100, 18 NVLinks, 8 NICs a server
  h100.servers = 64;
  const Cluster c = apply_failure(h100, parse_failure("nvlink:17/3"));
  CHECK(cli::describe(parse_failure("nvlink:17/3"), c) ==
        "one of 18 NVLinks of GPU 3 on server 17 (global GPU 139): it keeps 17");
  // Two specs on one GPU are priced together: each says what the GPU keeps of both, 18 - 3 - 3.
  const Cluster twice = apply_failure(apply_failure(h100, parse_failure("nvlink:1/2:3")),
                                      parse_failure("nvlink:1/2:3"));
  CHECK(cli::describe(parse_failure("nvlink:1/2:3"), twice) ==
        "3 of 18 NVLinks of GPU 2 on server 1 (global GPU 10): it keeps 12 (with its other "
        "failed links)");
  CHECK(cli::describe(parse_failure("nvlink:0/2:all"), h100) ==
        "all 18 NVLinks of GPU 2 on server 0 (global GPU 2): its traffic falls back to PCIe");
  CHECK(cli::describe(parse_failure("nic:3/1"), apply_failure(h100, parse_failure("nic:3/1"))) ==
        "NIC 1 of 8 on server 3: its GPUs share the other 7");
  // Two NICs of one server: each says what the server keeps of both (it said "the other 7").
  const Cluster two_nics =
      apply_failures(h100, {parse_failure("nic:3/1"), parse_failure("nic:3/2")});
  CHECK(cli::describe(parse_failure("nic:3/1"), two_nics) ==
        "NIC 1 of 8 on server 3: its GPUs share the other 6 (with its other failed NICs)");
  CHECK(cli::describe(parse_failure("gpu:1/2"), h100) == "GPU 2 on server 1 (global GPU 10) dead");
  CHECK(cli::describe(parse_failure("server:3"), h100) == "server 3 dead (GPUs 24-31)");
  const Cluster mesh = cluster_preset("dgx1-v100");  // hybrid cube mesh
  CHECK(cli::describe(parse_failure("mesh:1/0-4"), mesh) ==
        "the direct link GPU 0 - GPU 4 on server 1 (2 NVLinks)");
  CHECK(cli::describe(parse_failure("nvlink:1/0:all"), mesh) ==
        "every direct NVLink of GPU 0 on server 1 (global GPU 8) (to GPUs 1, 2, 3, 4)");
}

namespace {

/// The seed question's shape: 512 H100 in 64 servers, TP 8 x PP 8 x DP 8, GPU 139 dead.
WhatIf seed_what_if() {
  WhatIf w;
  w.degraded = cluster_preset("dgx-h100");
  w.degraded.servers = 64;
  w.degraded.health.dead_gpus.insert(139);
  w.baseline.config = ParallelConfig{.tp = 8, .pp = 8, .dp = 8, .micro_batch = 1};
  w.baseline.estimate.time.step_s = 10.0;
  return w;
}

WhatIfOption note(WhatIfKind kind, OptionNote why) {
  WhatIfOption o;
  o.kind = kind;
  o.note = why;
  return o;
}

}  // namespace

TEST_CASE("the what-if's options in words", "[cli_text]") {
  WhatIf w = seed_what_if();
  CHECK(cli::option_text(note(WhatIfKind::keep, OptionNote::ranks_on_dead), w) ==
        "the plan has ranks on 1 GPU (139) that are dead: it cannot run as placed");
  CHECK(cli::option_text(note(WhatIfKind::replace, OptionNote::no_spare), w) ==
        "the split needs 512 GPUs and 511 are left: no spare server to move the ranks of 1 GPU "
        "(139) to (the job uses all 64)");
  CHECK(cli::option_text(note(WhatIfKind::replace, OptionNote::tp_whole_server), w) ==
        "TP 8 takes the whole server: there is no other grouping");
  CHECK(cli::option_text(note(WhatIfKind::replace, OptionNote::switch_no_gain), w) ==
        "on an NVSwitch a group runs at its slowest member's links and every GPU is in some TP "
        "group: no regrouping of the same split avoids the bad GPU");
  CHECK(cli::option_text(note(WhatIfKind::cordon_gpu, OptionNote::not_one_gpu), w) ==
        "the failure is not on one GPU");
  WhatIfOption gpu = note(WhatIfKind::cordon_gpu, OptionNote::cordoned);
  gpu.cordoned = {139};
  gpu.replan = {Replan::no_split, 511};
  CHECK(cli::option_text(gpu, w) ==
        "takes GPU 139 out: no split of 511 GPUs divides the model and batch");
  gpu.replan.pinned = true;
  CHECK(cli::option_text(gpu, w) ==
        "takes GPU 139 out: no split of 511 GPUs divides the model and batch with the pins");
  gpu.replan.pinned_gpus = 512;
  CHECK(cli::option_text(gpu, w) ==
        "takes GPU 139 out: the pinned --tp, --pp and --dp take 512 GPUs and 511 are left (drop "
        "a pin to re-plan)");
  WhatIfOption alone = note(WhatIfKind::cordon_server, OptionNote::cordoned);
  alone.cordoned = {0};
  alone.replan = {Replan::no_gpu_left, 0};
  CHECK(cli::option_text(alone, w) == "takes server 0 out: no GPU is left");
  WhatIfOption pinned_out = note(WhatIfKind::cordon_server, OptionNote::cordoned);
  pinned_out.cordoned = {17};
  pinned_out.replan = {Replan::no_split, 504, 512, true};
  CHECK(cli::option_text(pinned_out, w) ==
        "takes server 17 out: the pinned --tp, --pp and --dp take 512 GPUs and 504 are left (drop "
        "a pin to re-plan)");
  WhatIfOption servers = note(WhatIfKind::cordon_server, OptionNote::cordoned);
  servers.available = true;
  servers.cordoned = {3, 5};
  servers.replan = {Replan::no_fit, 496};
  servers.gpus = 488;
  servers.servers = 61;
  servers.spare_servers = 1;
  CHECK(cli::option_text(servers, w) ==
        "takes servers 3,5 out; no split of 496 GPUs fits in memory, so 1 more idle as spares: "
        "re-plans on 61 servers (488 GPUs)");
  w.baseline.config.tp = 2;
  WhatIfOption regrouped = note(WhatIfKind::replace, OptionNote::regrouped);
  regrouped.regrouped = {{0, {0, 4, 1, 5, 2, 6, 3, 7}}};
  CHECK(cli::option_text(regrouped, w) ==
        "same split, GPUs regrouped: server 0 TP groups [0 4] [1 5] [2 6] [3 7]");
}

TEST_CASE("the what-if's recommendation and groups hit in words", "[cli_text]") {
  WhatIf w = seed_what_if();
  WhatIfOption server = note(WhatIfKind::cordon_server, OptionNote::cordoned);
  server.available = true;
  server.gpus = 504;
  server.step_time_s = 12.0;
  server.slowdown = 0.2;
  w.options = {server, note(WhatIfKind::keep, OptionNote::ranks_on_dead)};
  CHECK(cli::recommendation(w) ==
        "cordon-server: 12.000 s/step (+20.0% vs the healthy 10.000 s); the healthy plan cannot "
        "run without its dead GPUs and there is no spare, so it re-plans on what is left, giving "
        "up 8 of 512 GPUs");
  w.options = {note(WhatIfKind::keep, OptionNote::ranks_on_dead)};
  CHECK(cli::recommendation(w) ==
        "no option runs: the plan has ranks on 1 GPU (139) that are dead: it cannot run as placed");
  GroupHit hit{.dimension = "tp", .gpus = {136, 137, 138, 139}, .before = {}, .after = {}};
  hit.before.intra_gbps = 450.0;
  hit.after.intra_gbps = 425.0;
  Cluster dgx;  // 8-GPU servers, 8-GPU domains
  CHECK(cli::hit_text(hit, dgx) == "TP group 136-139: 450 GB/s -> 425 GB/s");
  // A DP group across domains whose NVLink part slowed: the domain is named as the cluster has
  // it, a server on DGX, an NVLink domain on GB200 (a rack or a job's segment of one).
  GroupHit dp{.dimension = "dp", .gpus = {0, 64}, .before = {}, .after = {}};
  dp.before.domains = 2;
  dp.before.intra_gbps = 900.0;
  dp.after.intra_gbps = 850.0;
  CHECK(cli::hit_text(dp, dgx) == "DP group 0,64: inside the server 900 GB/s -> 850 GB/s");
  Cluster gb200 = dgx;
  gb200.gpus_per_server = 4;
  gb200.nvlink.domain_gpus = 64;
  CHECK(cli::hit_text(dp, gb200) == "DP group 0,64: inside the NVLink domain 900 GB/s -> 850 GB/s");
  hit.lost = true;
  CHECK(cli::hit_text(hit, dgx) == "TP group 136-139 lost a GPU");
}

TEST_CASE("a search's shortfall and rules in words", "[cli_text]") {
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  MemoryShortfall s{.needed_bytes = 93.2 * gib, .usable_bytes = 79.2 * gib, .reserve_gib = 0.0};
  CHECK(cli::shortfall_text(s) ==
        "needs 93.20 GiB per GPU before fragmentation (CUDA context and NCCL buffers included), "
        "79.20 GiB usable");
  s.reserve_gib = 2.0;
  CHECK(cli::shortfall_text(s) ==
        "needs 93.20 GiB per GPU before fragmentation (CUDA context and NCCL buffers included), "
        "79.20 GiB usable "
        "(2 GiB kept free)");
  CHECK(cli::shortfall_text(PlanResult{}).empty());
  SplitRules rules{.gpus = 64,
                   .heads = 32,
                   .kv_heads = 8,
                   .ffn_hidden = 14336,
                   .layers = 32,
                   .uneven_stages = false,
                   .global_batch = 256,
                   .moe = false};
  CHECK(cli::no_split_text(rules) ==
        "no configuration of 64 GPUs obeys the rules and pins (tp divides heads 32, kv_heads 8 "
        "and ffn_hidden 14336, pp divides layers 32, tp*cp*pp*dp = GPUs, dp divides the global "
        "batch 256, micro-batch divides global batch / dp, vp divides a stage's layers with pp > "
        "1 and micro-batches a multiple of pp)");
  rules.uneven_stages = true;
  rules.moe = true;
  rules.sp_seq_len = 4096;
  CHECK(cli::no_split_text(rules) ==
        "no configuration of 64 GPUs obeys the rules and pins (tp divides heads 32, kv_heads 8 "
        "and ffn_hidden 14336, tp*cp divides seq_len 4096 (sequence "
        "parallelism), pp at most the layers 32, tp*cp*pp*dp = GPUs, dp divides the global batch "
        "256, micro-batch divides global batch / dp, vp divides a stage's layers with pp > 1 and "
        "micro-batches a multiple of pp, ep divides the experts and tp*cp*dp)");
  // A stack without pipelines (fsdp): no PP or VP rule, the product without pp.
  rules.pipelines = false;
  rules.moe = false;
  rules.sp_seq_len = 0;
  CHECK(cli::no_split_text(rules) ==
        "no configuration of 64 GPUs obeys the rules and pins (tp divides heads 32, kv_heads 8 "
        "and ffn_hidden 14336, no pipeline parallelism (the stack's), tp*cp*dp = GPUs, dp "
        "divides the global batch 256, micro-batch divides global batch / dp)");
}

TEST_CASE("--emit refusals in words: one line each, what to change when no knob helps",
          "[cli_text]") {
  Model model;
  model.name = "custom";
  model.training.dtype = Dtype::tf32;
  model.ffn = FfnKind::relu;
  const RefusalKind all[] = {RefusalKind::uneven_ranks,
                             RefusalKind::moe_model,
                             RefusalKind::context_parallel,
                             RefusalKind::dtype,
                             RefusalKind::ffn,
                             RefusalKind::model_shape,
                             RefusalKind::sharding_with_pp,
                             RefusalKind::interleaved,
                             RefusalKind::tp_with_pp,
                             RefusalKind::tp_with_zero3,
                             RefusalKind::sequence_parallel,
                             RefusalKind::no_sequence_parallel,
                             RefusalKind::selective_recompute,
                             RefusalKind::ddp_multi_dim,
                             RefusalKind::zero1,
                             RefusalKind::hybrid_shard};
  for (const Release& release : releases()) {
    for (const RefusalKind kind : all) {
      Obstacle o;
      o.kind = kind;
      const std::string reason = cli::refusal_reason(o, release, model);
      INFO(release_id(release) << " " << static_cast<int>(kind));
      CHECK_FALSE(reason.empty());
      CHECK(reason.find('\n') == std::string::npos);
    }
  }
  Obstacle uneven;
  uneven.server = 0;
  uneven.ranks = 8;
  uneven.other_server = 1;
  uneven.other_ranks = 7;
  uneven.dead_server = 1;
  uneven.gpus_per_server = 8;
  const Release& megatron = parse_release("megatron");
  CHECK(cli::refusal_reason(uneven, megatron, model) ==
        "its ranks sit unevenly: server 0 runs 8 of them, server 1 runs 7, and the launcher "
        "starts the same GPUs on every node");
  const Stack core = stack_preset("megatron-core");
  Refusal refusal{uneven, std::nullopt, uneven, false};
  CHECK(cli::refusal_change(refusal, megatron, core) ==
        "cordon the whole server: --fail-link server:1");
  refusal.change.dead_server = -1;
  CHECK(cli::refusal_change(refusal, megatron, core) ==
        "a split whose GPUs fill whole servers of 8");
  refusal.no_dividing_split = true;
  CHECK(cli::refusal_change(refusal, megatron, core) ==
        "no split of the same GPUs it runs divides the batch");
}

TEST_CASE("--emit refusals in words: each framework's own rule and fix", "[cli_text]") {
  Model model;
  model.name = "custom";
  model.training.dtype = Dtype::fp32;
  Obstacle o;
  o.kind = RefusalKind::ddp_multi_dim;
  const Release& titan = parse_release("torchtitan");
  const Stack core = stack_preset("megatron-core");
  CHECK(cli::refusal_reason(o, titan, model) ==
        "torchtitan raises 'DDP has not supported > 1D parallelism' "
        "(models/llama3/infra/parallelize.py:151)");
  o.kind = RefusalKind::dtype;
  const Release& nemo = parse_release("nemo");
  CHECK(cli::refusal_reason(o, nemo, model) ==
        "NeMo 2.0's precision recipes are bf16/fp16 mixed (with or without FP8), not fp32");
  CHECK(cli::refusal_change({o, std::nullopt, o, false}, nemo, core) ==
        "--dtype bf16 (training.dtype in the model file)");
  o.kind = RefusalKind::model_shape;
  o.models = {"llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b"};
  o.other_release = "nemo-hydra";
  CHECK(cli::refusal_reason(o, nemo, model) ==
        "NeMo 2.0 pretraining recipes build their model from a config class "
        "(nemo/collections/llm/recipes), and none has custom's shape (layers, widths, heads, "
        "experts and attention)");
  CHECK(cli::refusal_change({o, std::nullopt, o, false}, nemo, core) ==
        "--model llama3-8b, llama3-70b, llama3-405b or gpt3-175b, or --emit nemo-hydra");
  o.kind = RefusalKind::context_parallel;
  o.cp = 2;
  CHECK(cli::refusal_reason(o, titan, model) ==
        "--emit writes context parallelism (CP 2) as the plan priced it: Transformer Engine's "
        "ring or Ulysses for megatron and nemo, PyTorch's all-gather rotater for torchtitan");
  CHECK(cli::refusal_change({o, std::nullopt, o, false}, titan, core) == "--cp 1");
  o.kind = RefusalKind::selective_recompute;
  CHECK(cli::refusal_change({o, std::nullopt, o, false}, titan, core).empty());  // a knob fixes it
  // NeMo's Hydra config runs delayed FP8 scaling only. Delayed in the model file is the fix
  // where the planning stack runs it (megatron-core); torchtitan does not, so planning under
  // it again would be refused: the fix names the release's stack.
  o.kind = RefusalKind::fp8_recipe;
  const Release& hydra = parse_release("nemo-hydra");
  CHECK(cli::refusal_change({o, std::nullopt, o, false}, hydra, core) ==
        "training.fp8.recipe delayed in the model file, or --emit nemo");
  CHECK(cli::refusal_change({o, std::nullopt, o, false}, hydra, stack_preset("torchtitan")) ==
        "plan it with --stack megatron-core and delayed scaling (stack torchtitan does not run "
        "it), or --emit nemo");
}

TEST_CASE("a calibration measured on another GPU than the cluster's is refused", "[cli_text]") {
  Calibration measured;
  measured.gpu = "NVIDIA A100-SXM4-80GB";
  const auto refusal = [&](const Gpu& gpu) {
    try {
      cli::check_calibration_on_gpu(measured, gpu, "cal.json",
                                    "{\n  \"gpu\": \"NVIDIA A100-SXM4-80GB\"\n}");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(none)");
  };
  CHECK(
      refusal(gpu_preset("h100-sxm-80g")) ==
      "cal.json:2: gpu: measured on 'NVIDIA A100-SXM4-80GB' (a100-sxm-80g), and the cluster's GPU "
      "is h100-sxm-80g: its fits and GEMM rates are another GPU's; calibrate on h100-sxm-80g, "
      "or plan with --gpu a100-sxm-80g");
  CHECK(refusal(gpu_preset("a100-sxm-80g")) == "(none)");
  Gpu own = gpu_preset("h100-sxm-80g");
  own.name = "my-h100";  // a GPU file of the user's own: no name to compare with
  CHECK(refusal(own) == "(none)");
  measured.gpu = "cpu";  // validate's CPU backend: no GPU
  CHECK(refusal(gpu_preset("h100-sxm-80g")) == "(none)");
  measured.gpu = "cpu: AMD EPYC 7R13 Processor";  // the same with its CPU model
  CHECK(refusal(gpu_preset("h100-sxm-80g")) == "(none)");
  // A device none of the built-in GPUs is (an H100 PCIe), or no device named: not this GPU.
  measured.gpu = "NVIDIA H100 PCIe";
  CHECK(refusal(gpu_preset("h100-sxm-80g"))
            .starts_with("cal.json:2: gpu: measured on 'NVIDIA H100 PCIe', not a GPU trident knows "
                         "as h100-sxm-80g"));
  CHECK(refusal(own) == "(none)");  // the user's own GPU file: theirs to match
  measured.gpu = "";
  CHECK(refusal(gpu_preset("h100-sxm-80g"))
            .starts_with("cal.json:2: gpu: no GPU named (the device the file was measured on)"));
  // The PCIe A100's names map to its preset.
  measured.gpu = "NVIDIA A100 80GB PCIe";
  CHECK(refusal(gpu_preset("a100-pcie-80g")) == "(none)");
}
