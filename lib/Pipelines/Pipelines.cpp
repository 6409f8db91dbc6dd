//===- Pipelines.cpp - Named pass pipelines of hisa -----------------------===//

#include "hisa/Pipelines/Pipelines.h"

#include "hisa/Conversion/Passes.h"
#include "hisa/Dialect/Tile/Transforms/Passes.h"
#include "hisa/Target/TargetSpec.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
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
  tile::buildTilePlanningPipeline(pm, chip, useTma);
}

/// The target the options describe, or an error naming what is wrong.
static bool getTarget(const hisa::TileToNVVMOptions &options,
                      hisa::TargetSpec &target, std::string &error) {
  if (options.optLevel < 0 || options.optLevel > 3) {
    error = "opt-level must be 0 to 3, got " + std::to_string(options.optLevel);
    return false;
  }
  // chip= may also carry features (the JIT's "sm_90a,-tma").
  return hisa::parseTargetSpec(options.chip, target, error) &&
         hisa::applyTargetFeatures(options.features, target, error);
}

LogicalResult hisa::buildTileToNVVMPipeline(OpPassManager &pm,
                                            const TileToNVVMOptions &options,
                                            std::string *error) {
  TargetSpec target;
  std::string message;
  if (!getTarget(options, target, message)) {
    if (error)
      *error = "tile-to-nvvm: " + message;
    return failure();
  }
  // The JIT's stages, in its order (lib/Runtime/Compiler.cpp).
  tile::buildTileSpecializationPipeline(pm, options.params);
  buildTilePlanningPipeline(pm, target.chip, target.tma);
  TileToNVVMOptions lowering;
  lowering.copyOptionValuesFrom(options);
  lowering.chip = target.chip;
  // Features given in chip= ("sm_90a,+narrow-indices") travel on.
  if (target.narrowIndices)
    lowering.features.push_back("+narrow-indices");
  lowering.features.push_back(target.elideSync ? "+elide-sync"
                                               : "-elide-sync");
  buildTileLoweringPipeline(pm, lowering);
  return success();
}

void hisa::buildTileLoweringPipeline(OpPassManager &pm,
                                     const TileToNVVMOptions &options) {
  TargetSpec spec;
  std::string ignored; // (buildTileToNVVMPipeline has checked the options)
  bool known = getTarget(options, spec, ignored);
  ConvertTileToGPUOptions convert;
  convert.chip = options.chip;
  convert.maxUnrolledOps = options.maxUnrolledOps;
  convert.fpContract = options.fpContract;
  convert.elideSync = known && spec.elideSync;
  pm.addPass(createConvertTileToGPU(convert));
  // Fragment registers stay one alloca per value here: LLVM's SROA/mem2reg
  // (in the PTX translation's -O3 pipeline) promotes them in near-linear
  // time and gives the same PTX, while MLIR's mem2reg walks the region once
  // per alloca (quadratic: 2 s for 2048 values per thread, minutes beyond).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  // The PTX ISA version (wgmma, TMA and setmaxnreg need 8.0).
  target.features = "+ptx80";
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  if (known && spec.narrowIndices) {
    device.addPass(createTileBoundDims());
    device.addPass(createTileNarrowIndexArithmetic());
    device.addPass(createCanonicalizerPass());
  }
  device.addPass(createTileLowerSCFToCFBottomUp());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertNVGPUToNVVMPass());
  // Before libdevice claims it: exp2 as one MUFU.EX2 (flush to zero).
  device.addPass(createTileLowerExp2());
  device.addPass(createConvertGpuOpsToNVVMOps());
  // Math ops the NVVM lowering leaves (integer ones such as math.ctpop)
  // become LLVM intrinsics; the float ones were mapped to libdevice above.
  device.addPass(createConvertMathToLLVMPass());
  // Tensor maps are passed by value and addressed in parameter space.
  device.addPass(createTileMarkTensorMapParams());
  // `.extern .shared` array for the dynamic shared-memory window.
  device.addPass(createTileExternDynamicSharedMemory());
  // wgmma and other PTX-builder NVVM ops become inline PTX.
  device.addPass(createConvertNVVMToLLVMPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  // Last: the lowerings' fences are all there and the blocks merged.
  if (known && spec.elideSync)
    device.addPass(createTileElideProxyFences());
  device.addPass(createReconcileUnrealizedCastsPass());
}

void hisa::registerTileToNVVMPipeline() {
  // Registered by hand (not PassPipelineRegistration) so that a bad chip or
  // an unknown feature is a parse error of the pipeline, never ignored.
  registerPassPipeline(
      "tile-to-nvvm",
      "Lower tile kernels to gpu.modules in NVVM form (then hisa-translate "
      "--gpu-to-ptx)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        TileToNVVMOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error;
        if (failed(buildTileToNVVMPipeline(pm, options, &error)))
          return errorHandler(error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optionsHandler) {
        optionsHandler(TileToNVVMOptions());
      });
}
