//===- PlanningPipeline.cpp - Specialization and planning stages ----------===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void hisa::tile::buildTileSpecializationPipeline(OpPassManager &pm,
                                                 ArrayRef<std::string> params) {
  pm.addPass(createTileInlineFunctions());
  TileBindParamsOptions bind;
  bind.params.assign(params.begin(), params.end());
  pm.addPass(createTileBindParams(bind));
}

void hisa::tile::buildTilePlanningPipeline(OpPassManager &pm, StringRef chip,
                                           bool useTma) {
  // Bound parameters are constants now: fold the branches they decide, so
  // that layouts, the shared-memory plan and barrier placement never see
  // the paths a specialization cannot take. (Every pipeline binds
  // parameters right before this one: tile-to-nvvm, the JIT and
  // tile-report-resources.)
  pm.addPass(createCanonicalizerPass());
  // (After folding: a loop in a branch the specialization removed is gone.)
  pm.addPass(createTileUnrollLoops());
  TileAssignLayoutsOptions layouts;
  layouts.chip = chip.str();
  pm.addPass(createTileAssignLayouts(layouts));
  TileUseTmaOptions tma;
  tma.chip = chip.str();
  tma.enable = useTma;
  pm.addPass(createTileUseTma(tma));
  pm.addPass(createTilePlanSharedMemory());
}
