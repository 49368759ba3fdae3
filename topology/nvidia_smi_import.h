#pragma once
/// Reads `nvidia-smi topo -m` output: the device matrix (GPU# rows and columns with X, NV#,
/// PIX, PXB, PHB, NODE, SYS; NIC columns named NIC# or, from older drivers, mlx5_#), the
/// "NIC Legend:" block, and `nvidia-smi -L` lines ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)")
/// when pasted along. Tolerates ANSI colour codes, tabs, CRLF, the trailing affinity columns
/// ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") and driver versions that lack them.
#include <string>

#include "topology/server_import.h"

namespace trident {

/// Parses `text` read from `source`. Throws InputError "SOURCE:LINE: ..." when the matrix is
/// missing, a row has the wrong number of cells, or a cell is not a known connection.
[[nodiscard]] ImportedServer parse_nvidia_smi_topo(const std::string& text,
                                                   const std::string& source);

}  // namespace trident
