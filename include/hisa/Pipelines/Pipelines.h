//===- Pipelines.h - Named pass pipelines of hisa ---------------*- C++ -*-===//

#ifndef HISA_PIPELINES_PIPELINES_H
#define HISA_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LogicalResult.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace hisa {

struct TileToNVVMOptions : public mlir::PassPipelineOptions<TileToNVVMOptions> {
  ListOption<std::string> params{
      *this, "params",
      llvm::cl::desc("Kernel parameters as name=value (default: each "
                     "kernel's defaults)")};
  Option<std::string> chip{*this, "chip", llvm::cl::desc("Target SM"),
                           llvm::cl::init("sm_90a")};
  ListOption<std::string> features{
      *this, "features",
      llvm::cl::desc("Target features, as in the JIT's target string "
                     "(sm_90a,-tma): -tma keeps every staged copy on "
                     "cp.async; unknown features are refused")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level"),
                       llvm::cl::init(3)};
  // Forwarded to convert-tile-to-gpu (the JIT keeps these defaults).
  Option<int64_t> maxUnrolledOps{
      *this, "max-unrolled-ops",
      llvm::cl::desc("Refuse a kernel whose unrolled code would exceed this "
                     "many tile-level operations per thread"),
      llvm::cl::init(65536)};
  Option<bool> fpContract{
      *this, "fp-contract",
      llvm::cl::desc("Allow float multiply-add contraction (nvcc "
                     "--fmad=true)"),
      llvm::cl::init(true)};
};

/// tile kernels -> gpu.module in NVVM form with an #nvvm.target: bind
/// parameters, assign fragment layouts, plan shared memory, lower to
/// gpu/vector/memref/scf, then to the LLVM/NVVM dialects.
/// The whole tile lowering. Fails (with `error` set) on a malformed chip or
/// an unknown target feature.
mlir::LogicalResult buildTileToNVVMPipeline(mlir::OpPassManager &pm,
                                            const TileToNVVMOptions &options,
                                            std::string *error = nullptr);

/// The stages of the above after binding, for clients (the JIT) that read
/// the IR in between: layouts and shared memory, then the lowering.
void buildTilePlanningPipeline(mlir::OpPassManager &pm,
                               llvm::StringRef chip = "sm_90a",
                               bool useTma = true);
void buildTileLoweringPipeline(mlir::OpPassManager &pm,
                               const TileToNVVMOptions &options);

/// Registers `tile-to-nvvm` with the pass registry.
void registerTileToNVVMPipeline();

} // namespace hisa

#endif // HISA_PIPELINES_PIPELINES_H
