//===- hisa-opt.cpp - Parse, verify and transform hisa IR -----------------===//

#include "hisa/Tools/Registration.h"
#include "hisa/Tools/SourceLimits.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  hisa::registerAllHisaDialects(registry);
  hisa::registerAllHisaPasses();
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "hisa optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  // Input MLIR's parser would abort on, refused with a diagnostic first.
  llvm::SourceMgr sourceMgr;
  unsigned bufferId = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBuffer(input->getMemBufferRef(),
                                       /*RequiresNullTerminator=*/false),
      llvm::SMLoc());
  if (hisa::reportSourceLimitViolation(sourceMgr, bufferId))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
