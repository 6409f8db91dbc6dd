//===- PlanningPipeline.cpp - Specialization and planning stages ----------===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

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
  TileAssignLayoutsOptions layouts;
  layouts.chip = chip.str();
  pm.addPass(createTileAssignLayouts(layouts));
  TileUseTmaOptions tma;
  tma.chip = chip.str();
  tma.enable = useTma;
  pm.addPass(createTileUseTma(tma));
  pm.addPass(createTilePlanSharedMemory());
}
