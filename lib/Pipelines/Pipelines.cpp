//===- Pipelines.cpp - Named pass pipelines of hisa -----------------------===//

#include "hisa/Pipelines/Pipelines.h"

#include "hisa/Conversion/Passes.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void hisa::buildTilePlanningPipeline(OpPassManager &pm, StringRef chip,
                                     bool useTma) {
  tile::TileAssignLayoutsOptions layouts;
  layouts.chip = chip.str();
  pm.addPass(tile::createTileAssignLayouts(layouts));
  tile::TileUseTmaOptions tma;
  tma.chip = chip.str();
  tma.enable = useTma;
  pm.addPass(tile::createTileUseTma(tma));
  pm.addPass(tile::createTilePlanSharedMemory());
}

void hisa::buildTileToNVVMPipeline(OpPassManager &pm,
                                   const TileToNVVMOptions &options) {
  tile::TileBindParamsOptions bind;
  bind.params.assign(options.params.begin(), options.params.end());
  pm.addPass(tile::createTileBindParams(bind));
  buildTilePlanningPipeline(pm, options.chip, options.tma);
  buildTileLoweringPipeline(pm, options);
}

void hisa::buildTileLoweringPipeline(OpPassManager &pm,
                                     const TileToNVVMOptions &options) {
  ConvertTileToGPUOptions convert;
  convert.chip = options.chip;
  pm.addPass(createConvertTileToGPU(convert));
  // Fragment registers become SSA values; then CSE merges the loads that the
  // unrolled tile.parallel bodies repeat (e.g. a per-row scale).
  pm.addPass(createMem2Reg());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  // Tensor maps are passed by value and addressed in parameter space.
  device.addPass(createTileMarkTensorMapParams());
  // wgmma and other PTX-builder NVVM ops become inline PTX.
  device.addPass(createConvertNVVMToLLVMPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
}

void hisa::registerTileToNVVMPipeline() {
  PassPipelineRegistration<TileToNVVMOptions>(
      "tile-to-nvvm",
      "Lower tile kernels to gpu.modules in NVVM form (then hisa-translate "
      "--gpu-to-ptx)",
      buildTileToNVVMPipeline);
}
