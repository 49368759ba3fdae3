// libFuzzer target: the --fail-link grammar (topology/failure.h). Each input line is one
// spec; every spec is parsed, then all are applied to an NVSwitch and a mesh preset and described.
#include <sstream>
#include <vector>

#include "cli/failure_text.h"
#include "fuzz/fuzz_common.h"
#include "topology/cluster_loader.h"
#include "topology/failure.h"

namespace {

void apply_to(const trident::Cluster& cluster, const std::vector<trident::Failure>& failures) {
  trident::fuzz::accept_input_errors([&] {
    const trident::Cluster broken = trident::apply_failures(cluster, failures);
    for (const trident::Failure& failure : failures) {
      (void)trident::cli::describe(failure, cluster);
    }
    (void)trident::dead_gpu_ids(broken);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const trident::Cluster nvswitch = trident::cluster_preset("dgx-h100");
  static const trident::Cluster mesh = trident::cluster_preset("dgx1-v100");
  std::istringstream lines(trident::fuzz::as_text(data, size));
  std::vector<trident::Failure> failures;
  std::string spec;
  while (std::getline(lines, spec)) {
    bool parsed = false;
    trident::fuzz::accept_input_errors([&] {
      failures.push_back(trident::parse_failure(spec));
      parsed = true;
    });
    if (!parsed) return 0;
  }
  if (failures.empty()) return 0;
  apply_to(nvswitch, failures);
  apply_to(mesh, failures);
  return 0;
}
