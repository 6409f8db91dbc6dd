//===- hisa-opt.cpp - Parse, verify and transform hisa IR -----------------===//

#include "hisa/Tools/Registration.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  hisa::registerAllHisaDialects(registry);
  hisa::registerAllHisaPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "hisa optimizer driver\n", registry));
}
