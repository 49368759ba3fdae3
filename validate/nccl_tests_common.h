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

/// One rank of a device report: its host and its process's "Group" (the color
/// NCCL_TESTS_SPLIT_MASK or NCCL_TESTS_SPLIT gave it; 0 without a split).
struct RankDevice {
  std::string host;
  long long group = 0;
  std::string where;  ///< the line or key that named its group ("file:12", "file: config...")
};

/// Fills ranks, groups, hosts and max_ranks_per_host from every rank of a report. A split run
/// (groups other than 0) measured each group as its own communicator, all at once: the table
/// printed by process 0 describes rank 0's group (nccl-tests src/common.cu @a0b82b2: busbw
/// from nProcs = the split communicator's size). Groups of unequal size are refused (their
/// times are averaged together). Empty `ranks` leaves the table as is.
void set_ranks(NcclTestsTable& table, const std::vector<RankDevice>& ranks,
               const std::string& source);

/// The JSON form (-J FILE); `given` (--collective) replaces the test name args[0] holds.
[[nodiscard]] std::vector<NcclTestsTable> parse_json(const std::string& text,
                                                     const std::string& source,
                                                     std::optional<Collective> given);

}  // namespace trident::nccl_tests
