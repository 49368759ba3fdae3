#pragma once
/// Reads NCCL's topology dump (NCCL_TOPO_DUMP_FILE): <system><cpu><pci busid=...><gpu dev=
/// sm= rank=><nvlink target= count= tclass=/></gpu></pci> ... <nic><net name= speed=/></nic>.
/// NVLinks whose tclass is 0x068000 go to an NVSwitch; class 0x03xxxx targets are GPUs (a
/// direct mesh link); 0x068001 is a CPU (ignored). net speed is in Mb/s.
#include <string>

#include "topology/server_import.h"

namespace trident {

/// Parses `text` read from `source`. Throws InputError "SOURCE:LINE: ..." for malformed XML,
/// a missing <system>, no <gpu>, or a GPU or link without the attributes NCCL always writes.
[[nodiscard]] ImportedServer parse_nccl_topo_xml(const std::string& text,
                                                 const std::string& source);

}  // namespace trident
