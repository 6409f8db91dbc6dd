// hisa_indexer_host: runs hisa::hisaIndexer from C++ on inputs in files, as a
// C++ inference server would (device memory from the CUDA driver, opened at
// run time; the indexer on raw pointers with a caller-owned workspace).
//
//   hisa_indexer_host --version
//   hisa_indexer_host DIR M N H D KB BLOCK_TOPK TOPK_TOKENS
//
// DIR holds q.bin [M, H, D] fp8, k.bin [N, D] fp8, k_scale.bin [N] f32,
// weights.bin [M, H] f32, ks.bin and ke.bin [M] int32; the program writes
// DIR/out.bin [M, TOPK_TOKENS] int32 (python/tests/test_cpp_host.py
// compares it with hisa.hisa_indexer).

#include <hisa/hisa.hpp>

#include "driver.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace host;

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--version") {
    std::printf("%s\n", hisa::version().c_str());
    return 0;
  }
  if (argc != 9) {
    std::fprintf(stderr,
                 "usage: %s DIR M N H D KB BLOCK_TOPK TOPK_TOKENS\n"
                 "       %s --version\n",
                 argv[0], argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  hisa::IndexerShape shape;
  shape.m = std::atoll(argv[2]);
  shape.n = std::atoll(argv[3]);
  shape.heads = std::atoll(argv[4]);
  shape.dim = std::atoll(argv[5]);
  shape.kb = std::atoll(argv[6]);
  shape.blockTopk = std::atoll(argv[7]);
  shape.topkTokens = std::atoll(argv[8]);

  uint64_t workspaceBytes = 0;
  if (hisa::Status s = hisa::hisaIndexerWorkspaceSize(shape, workspaceBytes);
      !s) {
    std::fprintf(stderr, "workspace size: %s\n", s.message.c_str());
    return 1;
  }

  Driver cu = openDriver();

  auto upload = [&](const char *name, size_t bytes) {
    std::vector<char> host = readFile(dir + "/" + name, bytes);
    CUdeviceptr device = 0;
    check(cu.memAlloc(&device, bytes ? bytes : 1), "cuMemAlloc");
    check(cu.memcpyHtoD(device, host.data(), bytes), "cuMemcpyHtoD");
    return device;
  };
  size_t m = shape.m, n = shape.n, h = shape.heads, d = shape.dim;
  CUdeviceptr q = upload("q.bin", m * h * d);
  CUdeviceptr k = upload("k.bin", n * d);
  CUdeviceptr kScale = upload("k_scale.bin", n * 4);
  CUdeviceptr weights = upload("weights.bin", m * h * 4);
  CUdeviceptr ks = upload("ks.bin", m * 4);
  CUdeviceptr ke = upload("ke.bin", m * 4);
  size_t outBytes = m * shape.topkTokens * 4;
  CUdeviceptr out = 0, workspace = 0;
  check(cu.memAlloc(&out, outBytes), "cuMemAlloc");
  check(cu.memAlloc(&workspace, workspaceBytes), "cuMemAlloc");

  auto pointer = [](CUdeviceptr p) { return reinterpret_cast<void *>(p); };
  hisa::Status s = hisa::hisaIndexer(
      pointer(q), pointer(k), static_cast<const float *>(pointer(kScale)),
      static_cast<const float *>(pointer(weights)),
      static_cast<const int32_t *>(pointer(ks)),
      static_cast<const int32_t *>(pointer(ke)),
      static_cast<int32_t *>(pointer(out)), shape, pointer(workspace),
      workspaceBytes, /*stream=*/nullptr);
  if (!s) {
    std::fprintf(stderr, "hisa_indexer: %s\n", s.message.c_str());
    return 1;
  }
  check(cu.ctxSynchronize(), "cuCtxSynchronize");
  std::vector<char> result(outBytes);
  check(cu.memcpyDtoH(result.data(), out, outBytes), "cuMemcpyDtoH");
  std::ofstream(dir + "/out.bin", std::ios::binary)
      .write(result.data(), static_cast<std::streamsize>(outBytes));
  for (CUdeviceptr p : {q, k, kScale, weights, ks, ke, out, workspace})
    cu.memFree(p);
  std::printf("hisa_indexer_host: M=%zu N=%zu workspace %llu bytes: ok\n", m, n,
              static_cast<unsigned long long>(workspaceBytes));
  return 0;
}
