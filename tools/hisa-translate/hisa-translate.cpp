//===- hisa-translate.cpp - Translate hisa GPU modules --------------------===//

#include "hisa/Target/PTXTranslation.h"
#include "hisa/Tools/Registration.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  hisa::registerGPUTranslations(hisa::registerAllHisaDialects);
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "hisa translation driver\n"));
}
