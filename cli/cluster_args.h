#pragma once
/// The cluster and model flags every planning command shares (docs/cli.md "Flags": --cluster
/// --gpus --servers --gpus-per-server --gpu --model --global-batch --seq-len), how they resolve
/// to a Cluster and a Model, and the one-line summaries commands print.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "costmodel/model.h"
#include "costmodel/stack.h"
#include "topology/cluster.h"

namespace trident::cli {

inline constexpr const char* kDefaultCluster = "dgx-h100";
inline constexpr const char* kDefaultModel = "gpt3-175b";

/// 0 / "" = not given.
struct ClusterArgs {
  std::string cluster;  ///< preset NAME or FILE
  int gpus = 0;
  int servers = 0;
  int gpus_per_server = 0;
  std::string gpu;  ///< preset NAME or FILE
};

struct ModelArgs {
  std::string model;  ///< preset NAME or FILE
  long long global_batch = 0;
  int seq_len = 0;
  std::string dtype;  ///< "" = the model's training.dtype
};

/// Flag checks with trident's one-line wording ("expected a positive integer, got '-1'")
/// instead of CLI11's range text; numbers must be finite.
[[nodiscard]] CLI::Validator positive_integer_check();
[[nodiscard]] CLI::Validator non_negative_integer_check();
/// One of `names`, the error in the same style: "expected none|selective|full, got 'maybe'".
[[nodiscard]] CLI::Validator choice_check(std::vector<std::string> names);
/// A positive integer at most `most` ("expected a positive integer at most 16777216, got ...").
[[nodiscard]] CLI::Validator positive_integer_check(long long most);
/// A non-negative integer at most `most`, worded as above.
[[nodiscard]] CLI::Validator non_negative_integer_check(long long most);
[[nodiscard]] CLI::Validator positive_number_check();

void add_cluster_flags(CLI::App& app, ClusterArgs& args);
void add_model_flags(CLI::App& app, ModelArgs& args);

/// True when a NAME|FILE argument names a file: "-" (standard input), or it has a '/' or ends
/// .yaml/.yml/.json.
[[nodiscard]] bool names_file(const std::string& arg);

/// The cluster the flags describe: --cluster (default dgx-h100), --gpu swapping the GPU (the
/// server's links stay), then the shape: --gpus with --servers derives GPUs per server,
/// --gpus alone keeps the preset's GPUs per server, --servers alone keeps it too. A domain
/// that was one server follows a changed server size. Errors name the flag ("--gpus 500: not
/// divisible into 64 servers").
[[nodiscard]] Cluster resolve_cluster(const ClusterArgs& args);

/// The model: --model (default gpt3-175b), --global-batch, --seq-len and --dtype override the
/// file.
/// InputError when no global batch is known.
/// `fp8_by_flag` (when given) is set when --dtype fp8 made FP8 a model that was not: its
/// training.fp8 options are then the defaults, not the file's.
[[nodiscard]] Model resolve_model(const ModelArgs& args, bool* fp8_by_flag = nullptr);

/// "" for a GPU whose file gives its measured rates; else one line naming the rates priced at
/// their defaults (Gpu::defaulted), which are not measurements.
[[nodiscard]] std::string describe_gpu_defaults(const Gpu& gpu);

/// "assumed: cluster dgx-h100 (8x h100-sxm-80g per server, NVSwitch 18x25 GB/s, 8x400 Gb/s
/// NICs); model gpt3-175b, global batch 1536; change with --cluster/--gpu/--model/
/// --global-batch", naming only what was defaulted; "" when nothing was.
[[nodiscard]] std::string describe_assumptions(const ClusterArgs& cluster_args,
                                               const ModelArgs& model_args, const Cluster& cluster,
                                               const Model& model);

/// "8x h100-sxm-80g per server, NVSwitch 18x25 GB/s, 8x400 Gb/s NICs"
[[nodiscard]] std::string summarize_server(const Cluster& cluster);
/// What one domain of the cluster is called in the what-ifs ("If TP crossed two servers"):
/// "server" where the domain is a server (DGX), else "NVLink domain" where it spans servers (a
/// rack, a job's segment) or divides one, "PCIe domain" for such a part of a server without
/// NVLink.
[[nodiscard]] const char* domain_word(const Cluster& cluster);
/// What a link line calls a group's domain: "NVLink domain" wherever there is NVLink (a DGX's
/// too: the tier it names), else "server", or "PCIe domain" where the domain divides a server.
[[nodiscard]] const char* link_domain_word(const Cluster& cluster);
/// "the job's segments of 16 servers in 72-GPU racks" where the job runs in segments of a
/// rack-scale domain (nvlink.job_segments); empty otherwise.
[[nodiscard]] std::string segments_text(const Cluster& cluster);
/// "bf16 989 TFLOP/s, 80 GiB at 3350 GB/s, GEMM ceiling 80%, PCIe 50 GB/s"
[[nodiscard]] std::string summarize_gpu(const Gpu& gpu);
/// "174.6B parameters: 96 layers, hidden 12288, 96/96 heads, gelu, seq 2048, batch 1536"
/// "fp8 delayed scaling (linear GEMMs, TP all-gathers in FP8; output layer, activations,
/// attention in bf16)"
/// or the dtype: which tensors are 8-bit and which stay 16-bit. With `stack`: FP8 weights the
/// stack gathers and keeps in 16 bits under every plan (torchao's rowwise recipe) are said so.
[[nodiscard]] std::string summarize_precision(const Training& training,
                                              const Stack* stack = nullptr);
[[nodiscard]] std::string summarize_model(const Model& model, const Stack* stack = nullptr);
/// "174.6B", "8.03B", "1.01T"
[[nodiscard]] std::string format_count(double count);

}  // namespace trident::cli
