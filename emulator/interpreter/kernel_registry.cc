// The list of kernel families (see the extension point in kernel.h).

#include "emulator/interpreter/kernel.h"

namespace tpu::emulator::interpreter {
namespace {

KernelRegistry* BuildGlobal() {
  auto* registry = new KernelRegistry();
  RegisterStructuralKernels(*registry);
  RegisterControlFlowKernels(*registry);
  RegisterElementwiseKernels(*registry);
  RegisterCompareSelectKernels(*registry);
  RegisterConvertKernels(*registry);
  RegisterDataMovementKernels(*registry);
  RegisterDotKernels(*registry);
  RegisterReduceKernels(*registry);
  RegisterConvolutionKernels(*registry);
  RegisterWindowKernels(*registry);
  RegisterLinalgKernels(*registry);
  RegisterFftKernels(*registry);
  RegisterRngKernels(*registry);
  RegisterGatherScatterKernels(*registry);
  RegisterSortKernels(*registry);
  RegisterCollectiveKernels(*registry);
  RegisterRaggedAllToAllKernels(*registry);
  RegisterTokenKernels(*registry);
  RegisterSendRecvKernels(*registry);
  RegisterAsyncKernels(*registry);
  RegisterTopKKernels(*registry);
  RegisterCustomCallKernels(*registry);
  RegisterBatchNormKernels(*registry);
  RegisterRaggedDotKernels(*registry);
  RegisterStochasticConvertKernels(*registry);
  return registry;
}

}  // namespace

const KernelRegistry& KernelRegistry::Global() {
  static const KernelRegistry* registry = BuildGlobal();
  return *registry;
}

}  // namespace tpu::emulator::interpreter
