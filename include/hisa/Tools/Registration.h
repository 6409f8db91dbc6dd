//===- Registration.h - Everything the hisa tools register ------*- C++ -*-===//
//
// One entry point shared by hisa-opt, hisa-translate and the JIT, so that
// every stage of the pipeline can be replayed from the command line.
//
//===----------------------------------------------------------------------===//

#ifndef HISA_TOOLS_REGISTRATION_H
#define HISA_TOOLS_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace hisa {
/// The tile dialect, the upstream dialects the pipeline lowers through, their
/// ConvertToLLVM/translation interfaces and the NVVM target attribute.
void registerAllHisaDialects(mlir::DialectRegistry &registry);
/// The tile passes and the upstream passes and pipelines the tools expose.
void registerAllHisaPasses();
} // namespace hisa

#endif // HISA_TOOLS_REGISTRATION_H
