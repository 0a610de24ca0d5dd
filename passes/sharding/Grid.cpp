//===- Grid.cpp - the device mesh from --mesh ------------------------------===//
//
// -xf-grid: the one place a mesh string is parsed. Creates `shard.grid @mesh`
// with `xf.axis_names`; the sharding passes and lowering read it
// (sharding::Mesh::fromModule).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "compiler/sharding/Sharding.h"

#define DEBUG_TYPE "xf-grid"

namespace shardc {
#define GEN_PASS_DEF_XFGRID
#include "passes/Passes.h.inc"
} // namespace shardc

using namespace mlir;
using namespace shardc;

namespace {

class GridPass : public shardc::impl::XfGridBase<GridPass> {
public:
  using XfGridBase::XfGridBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    FailureOr<sharding::Mesh> mesh = sharding::Mesh::parse(this->mesh, error);
    if (failed(mesh)) {
      module.emitError() << error;
      return signalPassFailure();
    }
    mesh->symbol = symbol;
    for (auto grid : module.getOps<shard::GridOp>()) {
      if (grid.getSymName() != mesh->symbol)
        continue;
      FailureOr<sharding::Mesh> existing = sharding::Mesh::fromGrid(grid);
      if (failed(existing))
        return signalPassFailure();
      if (existing->sizes != mesh->sizes || existing->names != mesh->names) {
        grid.emitError() << "the module's grid @" << grid.getSymName() << " is "
                         << existing->str() << " but the mesh given is " << mesh->str();
        return signalPassFailure();
      }
      return; // already there
    }
    mesh->materialize(module);
  }
};

} // namespace
