#pragma once
/// Helpers shared by the text and JSON readers of nccl-tests output (internal to validate/).
#include <optional>
#include <string>
#include <vector>

#include "validate/nccl_tests_parser.h"

namespace trident::nccl_tests {

/// "./build/all_reduce_perf_mpi" -> "all_reduce_perf"; nullopt when no "*_perf" name.
[[nodiscard]] std::optional<std::string> find_test_name(const std::string& text);
/// "all_reduce_perf" -> Collective; throws InputError naming `source` for tests trident does
/// not model (reduce, gather, scatter, hypercube...).
[[nodiscard]] Collective collective_of(const std::string& test, const std::string& source);
/// nccl's version code (21903 or 2190) -> "2.19.3".
[[nodiscard]] std::string version_of_code(long long code);
/// Fills max_ranks_per_host and hosts from one hostname per rank.
void set_hosts(NcclTestsTable& table, const std::vector<std::string>& host_of_rank);

/// The JSON form (-J FILE); `given` (--collective) replaces the test name args[0] holds.
[[nodiscard]] std::vector<NcclTestsTable> parse_json(const std::string& text,
                                                     const std::string& source,
                                                     std::optional<Collective> given);

}  // namespace trident::nccl_tests
