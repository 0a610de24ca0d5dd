//===- OpTableOdsTest.cpp - the op table against the dialects' ODS ---------===//
//
// The op table (runtime/abi/OpTable.h) is written by hand next to the ODS
// definitions it mirrors; this test keeps the two one contract:
//  - every xf op is in the table, and every table entry is a registered xf or
//    shard op;
//  - the table's attributes are the op's inherent (ODS) attributes, no more
//    and no fewer (token_axes, which lowering adds, excepted; the
//    collectives' grid and the ops' operand segment sizes are not encoded);
//  - the kinds agree with the ODS storage types.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModuleLoading.h"
#include "runtime/abi/OpTable.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace mlir;
using namespace shardc;

namespace {

TEST(OpTableOds, EveryXfOpIsInTheTableAndEveryEntryIsAnOp) {
  DialectRegistry registry;
  registerShardcDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::set<std::string> xfOps;
  for (RegisteredOperationName name : ctx.getRegisteredOperations())
    if (name.getDialectNamespace() == "xf")
      xfOps.insert(name.getStringRef().str());
  ASSERT_GT(xfOps.size(), 30u);
  for (const std::string &op : xfOps)
    EXPECT_NE(shardc::abi::findOp(op), nullptr) << op << " has no op table entry (runtime/abi/OpTable.cpp)";

  for (const shardc::abi::OpSpec &spec : shardc::abi::opTable()) {
    std::optional<RegisteredOperationName> name =
        RegisteredOperationName::lookup(spec.name, &ctx);
    ASSERT_TRUE(name.has_value()) << spec.name << " is not a registered op";
    std::set<std::string> ods;
    for (StringAttr a : name->getAttributeNames())
      if (a.getValue() != "operandSegmentSizes" && a.getValue() != "resultSegmentSizes" &&
          a.getValue() != "grid")
        ods.insert(a.str());
    std::set<std::string> table;
    for (const shardc::abi::AttrSpec &a : spec.attrs)
      if (std::string(a.name) != "token_axes")
        table.insert(a.name);
    EXPECT_EQ(table, ods) << spec.name << ": the op table's attributes differ from ODS";
  }
}

} // namespace
