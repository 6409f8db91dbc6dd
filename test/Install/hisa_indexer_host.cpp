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

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

// The few CUDA driver entry points the program needs (no cuda.h).
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUdeviceptr = unsigned long long;
struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*ctxSynchronize)();
};

template <typename F> void load(void *library, const char *name, F &function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (!function) {
    std::fprintf(stderr, "libcuda.so.1 lacks %s\n", name);
    std::exit(2);
  }
}

void check(CUresult result, const char *what) {
  if (result != 0) {
    std::fprintf(stderr, "%s failed: CUresult %d\n", what, result);
    std::exit(2);
  }
}

std::vector<char> readFile(const std::string &path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  if (data.size() != bytes) {
    std::fprintf(stderr, "%s has %zu bytes, expected %zu\n", path.c_str(),
                 data.size(), bytes);
    std::exit(2);
  }
  return data;
}

} // namespace

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

  void *library = dlopen("libcuda.so.1", RTLD_NOW);
  if (!library) {
    std::fprintf(stderr, "no CUDA driver: %s\n", dlerror());
    return 2;
  }
  Driver cu;
  load(library, "cuInit", cu.init);
  load(library, "cuDeviceGet", cu.deviceGet);
  load(library, "cuDevicePrimaryCtxRetain", cu.primaryCtxRetain);
  load(library, "cuCtxSetCurrent", cu.ctxSetCurrent);
  load(library, "cuMemAlloc_v2", cu.memAlloc);
  load(library, "cuMemFree_v2", cu.memFree);
  load(library, "cuMemcpyHtoD_v2", cu.memcpyHtoD);
  load(library, "cuMemcpyDtoH_v2", cu.memcpyDtoH);
  load(library, "cuCtxSynchronize", cu.ctxSynchronize);
  CUdevice device;
  CUcontext context;
  check(cu.init(0), "cuInit");
  check(cu.deviceGet(&device, 0), "cuDeviceGet");
  check(cu.primaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cu.ctxSetCurrent(context), "cuCtxSetCurrent");

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
