// What a search says in words (cli/search_text.h).
#include "cli/search_text.h"

#include <cstdio>

namespace trident::cli {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

}  // namespace

std::string shortfall_text(const MemoryShortfall& shortfall) {
  char text[200];
  if (shortfall.reserve_gib > 0.0) {
    std::snprintf(text, sizeof text,
                  "needs %.2f GiB per GPU before fragmentation (CUDA context and NCCL buffers "
                  "included), %.2f GiB usable (%.0f GiB kept free)",
                  shortfall.needed_bytes / kGib, shortfall.usable_bytes / kGib,
                  shortfall.reserve_gib);
  } else {
    std::snprintf(text, sizeof text,
                  "needs %.2f GiB per GPU before fragmentation (CUDA context and NCCL buffers "
                  "included), %.2f GiB usable",
                  shortfall.needed_bytes / kGib, shortfall.usable_bytes / kGib);
  }
  return text;
}

std::string shortfall_text(const PlanResult& plan) {
  return plan.shortfall ? shortfall_text(*plan.shortfall) : "";
}

std::string no_split_text(const SplitRules& rules) {
  return "no configuration of " + std::to_string(rules.gpus) +
         " GPUs obeys the rules and pins (tp divides heads " + std::to_string(rules.heads) +
         ", kv_heads " + std::to_string(rules.kv_heads) + " and ffn_hidden " +
         std::to_string(rules.ffn_hidden) +
         (rules.sp_seq_len > 0 ? ", tp*cp divides seq_len " + std::to_string(rules.sp_seq_len) +
                                     " (sequence parallelism)"
                               : "") +
         (rules.uneven_stages ? ", pp at most the layers " : ", pp divides layers ") +
         std::to_string(rules.layers) + ", tp*cp*pp*dp = GPUs, dp divides the global batch " +
         std::to_string(rules.global_batch) + ", micro-batch divides global batch / dp" +
         (rules.moe ? ", ep divides the experts and tp*cp*dp" : "") +
         (rules.dp_shard > 0 ? ", --dp-shard " + std::to_string(rules.dp_shard) +
                                   " divides dp with a ZeRO stage sharded per unit"
                             : "") +
         (rules.ulysses_only ? ", cp divides the heads and kv_heads per TP rank (all-to-all CP)"
                             : "") +
         (rules.every_kth_layers > 0
              ? ", --recompute-layers " + std::to_string(rules.every_kth_layers) +
                    " divides the layers per chunk (every k-th block) on equal stages, or is at "
                    "least the chunk"
              : "") +
         ")";
}

}  // namespace trident::cli
