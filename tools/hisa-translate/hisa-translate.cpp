//===- hisa-translate.cpp - Translate hisa modules ------------------------===//

#include "hisa/Pipelines/Pipelines.h"
#include "hisa/Target/PTXTranslation.h"
#include "hisa/Tools/Registration.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

/// tile kernels straight to PTX or cubin with the default parameters (bind
/// others first with hisa-opt --tile-bind-params).
static LogicalResult translateTileKernels(ModuleOp module,
                                          llvm::raw_ostream &output,
                                          StringRef format) {
  PassManager pm(module.getContext());
  std::string error;
  if (failed(
          hisa::buildTileToNVVMPipeline(pm, hisa::TileToNVVMOptions(), &error)))
    return module.emitError(error);
  if (failed(pm.run(module)))
    return failure();
  return hisa::serializeGPUModules(module, output, format);
}

int main(int argc, char **argv) {
  hisa::registerGPUTranslations(hisa::registerAllHisaDialects);
  hisa::registerModuleTranslation(
      "tile-to-ptx", "Compile tile kernels to PTX (sm_90a)",
      [](ModuleOp module, llvm::raw_ostream &output) {
        return translateTileKernels(module, output, "isa");
      },
      hisa::registerAllHisaDialects);
  hisa::registerModuleTranslation(
      "tile-to-cubin", "Compile tile kernels to cubin (sm_90a; needs ptxas)",
      [](ModuleOp module, llvm::raw_ostream &output) {
        return translateTileKernels(module, output, "bin");
      },
      hisa::registerAllHisaDialects);
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "hisa translation driver\n"));
}
