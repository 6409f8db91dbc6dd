//===- driver.h - The CUDA driver calls of the install-test programs ------===//
//
// The few CUDA driver entry points the host programs need, opened at run
// time (no cuda.h: the programs build against the installed hisa package
// alone), and file reading for their inputs.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_TEST_INSTALL_DRIVER_H
#define HISA_TEST_INSTALL_DRIVER_H

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace host {

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

template <typename F>
inline void load(void *library, const char *name, F &function) {
  function = reinterpret_cast<F>(dlsym(library, name));
  if (!function) {
    std::fprintf(stderr, "libcuda.so.1 lacks %s\n", name);
    std::exit(2);
  }
}

inline void check(CUresult result, const char *what) {
  if (result != 0) {
    std::fprintf(stderr, "%s failed: CUresult %d\n", what, result);
    std::exit(2);
  }
}

inline std::vector<char> readFile(const std::string &path, size_t bytes) {
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

/// Opens libcuda.so.1, makes device 0's primary context current; exits
/// with status 2 when there is no driver.
inline Driver openDriver() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW);
  if (!library) {
    std::fprintf(stderr, "no CUDA driver: %s\n", dlerror());
    std::exit(2);
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
  return cu;
}

} // namespace host

#endif // HISA_TEST_INSTALL_DRIVER_H
