//===- PlanningPipeline.cpp - Layouts, TMA and shared memory --------------===//

#include "hisa/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

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
