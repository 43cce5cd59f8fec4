// The NCCL unique-id handshake of the multi-process test programs (one process per rank, RANK
// and WORLD_SIZE): rank 0 makes the id and publishes it in a file, the others wait for it.
#pragma once

#include <nccl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

// Written beside `path` and renamed over it, so a waiting rank never reads half an id. A rank 0
// that cannot make one exits 4: the others would wait for it forever.
inline ncclUniqueId ExchangeNcclId(int rank, const std::string& path) {
  ncclUniqueId id;
  if (rank == 0) {
    if (const ncclResult_t rc = ncclGetUniqueId(&id); rc != ncclSuccess) {
      std::fprintf(stderr, "ncclGetUniqueId failed: %d\n", static_cast<int>(rc));
      std::exit(4);
    }
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    std::fwrite(&id, sizeof id, 1, f);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
    return id;
  }
  for (;;) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t n = std::fread(&id, sizeof id, 1, f);
      std::fclose(f);
      if (n == 1) return id;
    }
    usleep(10'000);
  }
}
