//===- PTXTranslation.cpp - GPU modules to LLVM IR, PTX and cubin ---------===//

#include "hisa/Target/PTXTranslation.h"
#include "hisa/Target/TargetSpec.h"
#include "hisa/Tools/SourceLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

static void registerGPUDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

/// The module's gpu.modules that carry an #nvvm.target, or an error.
static FailureOr<SmallVector<gpu::GPUModuleOp>>
getNVVMModules(ModuleOp module) {
  SmallVector<gpu::GPUModuleOp> gpuModules;
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
    ArrayAttr targets = gpuModule.getTargetsAttr();
    if (!targets || !llvm::any_of(targets, llvm::IsaPred<NVVM::NVVMTargetAttr>))
      return gpuModule.emitError("gpu.module @")
             << gpuModule.getName()
             << " has no #nvvm.target; attach one (e.g. with "
                "--nvvm-attach-target=\"chip=sm_90a\") before translating";
    // LLVM aborts the process on chips and levels it cannot compile for.
    for (auto target : targets.getAsRange<NVVM::NVVMTargetAttr>()) {
      if (!hisa::isSupportedChip(target.getChip()))
        return gpuModule.emitError("gpu.module @")
               << gpuModule.getName() << " targets unsupported chip '"
               << target.getChip() << "' (hisa compiles for "
               << hisa::getSupportedChips() << ")";
      if (target.getO() < 0 || target.getO() > 3)
        return gpuModule.emitError("gpu.module @")
               << gpuModule.getName() << " has optimization level "
               << target.getO() << "; expected 0 to 3";
    }
    // Types LLVM IR cannot express crash the translation (e.g. an
    // !llvm.array of complex<f32> corrupts memory in ArrayType::get).
    WalkResult types = gpuModule.walk([&](Operation *op) {
      auto refuse = [&](Type type) {
        op->emitOpError("has type ")
            << type << ", which LLVM IR cannot express; lower it first";
        return WalkResult::interrupt();
      };
      if (auto global = dyn_cast<LLVM::GlobalOp>(op)) {
        if (!LLVM::isCompatibleType(global.getGlobalType()))
          return refuse(global.getGlobalType());
        // NVPTX aborts the process on a global in any other address space.
        unsigned space = global.getAddrSpace();
        if (space != 0 && space != 1 && space != 3 && space != 4 &&
            space != 5) {
          global.emitOpError("is in address space ")
              << space
              << ", which PTX has no state space for (0 generic, 1 "
                 "global, 3 shared, 4 constant, 5 local)";
          return WalkResult::interrupt();
        }
      }
      if (!isa<LLVM::LLVMDialect, NVVM::NVVMDialect>(op->getDialect()))
        return WalkResult::advance();
      for (Type type : op->getResultTypes())
        if (!LLVM::isCompatibleType(type))
          return refuse(type);
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (Type type : block.getArgumentTypes())
            if (!LLVM::isCompatibleType(type))
              return refuse(type);
      return WalkResult::advance();
    });
    if (types.wasInterrupted())
      return failure();
    gpuModules.push_back(gpuModule);
  }
  if (gpuModules.empty())
    return module.emitError("no gpu.module to translate; lower the input to "
                            "the GPU/NVVM dialects first");
  return gpuModules;
}

/// Serializes every gpu.module with gpu-module-to-binary and writes the
/// objects (PTX text or cubin bytes) to `output`.
LogicalResult hisa::serializeGPUModules(ModuleOp module, raw_ostream &output,
                                        StringRef format) {
  if (failed(getNVVMModules(module)))
    return failure();
  PassManager pm(module.getContext());
  GpuModuleToBinaryPassOptions options;
  options.compilationTarget = format.str();
  if (const char *cudaHome = std::getenv("CUDA_HOME"))
    options.toolkitPath = cudaHome;
  else
    options.toolkitPath = "/usr/local/cuda";
  pm.addPass(createGpuModuleToBinaryPass(options));
  if (failed(pm.run(module)))
    return failure();
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute object : binary.getObjects())
      output << cast<gpu::ObjectAttr>(object).getObject().getValue();
  return success();
}

static LogicalResult translateGPUModulesToLLVMIR(ModuleOp module,
                                                 raw_ostream &output) {
  FailureOr<SmallVector<gpu::GPUModuleOp>> gpuModules = getNVVMModules(module);
  if (failed(gpuModules))
    return failure();
  for (gpu::GPUModuleOp gpuModule : *gpuModules) {
    llvm::LLVMContext context;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(gpuModule, context, gpuModule.getName());
    if (!llvmModule)
      return gpuModule.emitError("failed to translate to LLVM IR");
    llvmModule->print(output, nullptr);
  }
  return success();
}

void hisa::registerModuleTranslation(
    StringRef name, StringRef description,
    std::function<LogicalResult(ModuleOp, raw_ostream &)> function,
    std::function<void(DialectRegistry &)> registerDialects) {
  TranslateRegistration(
      name, description,
      [function, registerDialects](
          const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
          raw_ostream &output, MLIRContext *context) -> LogicalResult {
        if (hisa::reportSourceLimitViolation(*sourceMgr,
                                             sourceMgr->getMainFileID()))
          return failure();
        DialectRegistry registry;
        registerDialects(registry);
        context->appendDialectRegistry(registry);
        OwningOpRef<ModuleOp> module =
            parseSourceFile<ModuleOp>(sourceMgr, ParserConfig(context));
        if (!module || failed(verify(*module)))
          return failure();
        return function(*module, output);
      });
}

void hisa::registerGPUTranslations(
    std::function<void(DialectRegistry &)> registerDialects) {
  auto registerAll = [registerDialects](DialectRegistry &registry) {
    registerGPUDialects(registry);
    registerDialects(registry);
  };
  registerModuleTranslation("gpu-to-llvmir",
                            "Translate the gpu.modules (NVVM form) to LLVM IR",
                            translateGPUModulesToLLVMIR, registerAll);
  registerModuleTranslation(
      "gpu-to-ptx", "Translate the gpu.modules (NVVM form) to PTX",
      [](ModuleOp module, raw_ostream &output) {
        return hisa::serializeGPUModules(module, output, "isa");
      },
      registerAll);
  registerModuleTranslation(
      "gpu-to-cubin",
      "Translate the gpu.modules (NVVM form) to cubin (needs ptxas)",
      [](ModuleOp module, raw_ostream &output) {
        return hisa::serializeGPUModules(module, output, "bin");
      },
      registerAll);
}
