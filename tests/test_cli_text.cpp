// cli/report_text.h: the one thousands separator and the one CSV quoting of the reporters;
// cli/plan_checks.h: the planner's option problems worded with their flags.
#include <catch2/catch.hpp>
#include <string>

#include "cli/plan_checks.h"
#include "cli/report_text.h"
#include "costmodel/stack.h"
#include "planner/option_check.h"

using trident::cli::csv_quoted;
using trident::cli::group_thousands;
using trident::cli::thousands;
using namespace trident;

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
  const Stack core = stack_preset("megatron-core");
  const Stack old = stack_preset("megatron-2021");
  using P = OptionProblem;
  CHECK(cli::describe(P{Knob::tp, OptionIssue::not_dividing_heads, 3, 0}, model, core) ==
        "--tp 3: must divide the model's heads (4) and kv_heads (2)");
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
