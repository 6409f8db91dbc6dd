//===- RejoinOp.cpp - Lower tile.rejoin -----------------------------------===//
//
// In a warp-specialized launch the body runs on both roles once their
// branches end: the consumers give back the registers setmaxnreg gave them
// and the producer takes its share again (each at the pool's even share,
// so the one body fits both), every thread meets at a block barrier, and
// the body is lowered with the block's whole thread count. What it uses
// from the consumers' branch (constants, the block index, arithmetic of
// those; the verifier refuses anything else) is computed again after the
// branches. Without a producer the body is lowered in place.
//
//===----------------------------------------------------------------------===//

#include "KernelLowering.h"

#include "hisa/Dialect/Tile/IR/TileLimits.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace hisa::tile;

LogicalResult KernelLowering::lowerRejoin(RejoinOp op, OpBuilder &b) {
  Location loc = op.getLoc();
  Block &body = op.getBody().front();
  body.getTerminator()->erase();
  SmallVector<Operation *> roots;
  for (Operation &inner : body.getOperations())
    roots.push_back(&inner);
  int64_t extraThreads = 0;
  if (roleSplit) {
    extraThreads = kProducerThreads;
    if (rejoinRegisters) {
      OpBuilder consumers(roleSplit.thenBlock()->getTerminator());
      NVVM::SetMaxRegisterOp::create(consumers, loc, rejoinRegisters,
                                     NVVM::SetMaxRegisterAction::decrease);
      OpBuilder producer(roleSplit.elseBlock()->getTerminator());
      NVVM::SetMaxRegisterOp::create(producer, loc, rejoinRegisters,
                                     NVVM::SetMaxRegisterAction::increase);
    }
    // The consumers' values the body reads, for every thread (what the
    // producer recomputes for its loop bounds, the same way).
    IRMapping mapping;
    WalkResult walk = body.walk([&](Operation *inner) {
      for (OpOperand &operand : inner->getOpOperands()) {
        FailureOr<Value> value =
            cloneForProducer(b, operand.get(), mapping, op.getOperation());
        if (failed(value))
          return WalkResult::interrupt();
        operand.set(*value);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    // What the consumers wrote to shared memory is read by every thread.
    gpu::BarrierOp::create(b, loc);
  }
  auto region = scf::ExecuteRegionOp::create(b, loc, TypeRange());
  Block *block = new Block();
  region.getRegion().push_back(block);
  block->getOperations().splice(block->end(), body.getOperations());
  OpBuilder end = OpBuilder::atBlockEnd(block);
  scf::YieldOp::create(end, loc);

  threads += extraThreads;
  LogicalResult result = success();
  for (Operation *root : roots)
    if (failed(lowerNested(root, nullptr))) {
      result = failure();
      break;
    }
  threads -= extraThreads;
  return result;
}
