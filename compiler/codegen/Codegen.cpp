//===- Codegen.cpp - object files and executables from rt -----------------===//

#include "compiler/codegen/Codegen.h"
#include "compiler/codegen/LinkConfig.h"

#include "runtime/Error.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace shardc::codegen {

LogicalResult emitObjectFile(ModuleOp module, const std::string &path) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext, "step");
  if (!llvmModule)
    return module.emitError("codegen: translation to LLVM IR failed");

  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return module.emitError() << "codegen: no target for " << triple.str() << ": " << error;
  llvm::TargetOptions targetOptions;
  // The step is a straight line of calls: nothing for optimization to win.
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "generic", "", targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::None));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return module.emitError() << "codegen: cannot write '" << path << "': " << ec.message();
  llvm::legacy::PassManager passes;
  if (machine->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::ObjectFile))
    return module.emitError("codegen: the target cannot emit object files");
  passes.run(*llvmModule);
  out.flush();
  return success();
}

namespace {

std::vector<std::string> linkArgs(const std::string &object, const std::string &output) {
  std::vector<std::string> args = {SHARDC_MPICXX, object, "-o", output};
  for (llvm::StringRef lib : llvm::split(llvm::StringRef(SHARDC_RUNTIME_LINK_LIBS), ';'))
    if (!lib.empty())
      args.push_back(lib.str());
  return args;
}

} // namespace

std::string linkCommand(const std::string &object, const std::string &output) {
  std::string cmd;
  for (const std::string &a : linkArgs(object, output))
    cmd += (cmd.empty() ? "" : " ") + a;
  return cmd;
}

void linkExecutable(const std::string &object, const std::string &output) {
  std::vector<std::string> args = linkArgs(object, output);
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  llvm::SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("shardc-link", "log", log);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(), log.str()};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(args[0], refs, std::nullopt, redirects, 0, 0, &error);
  std::string text;
  if (auto buf = llvm::MemoryBuffer::getFile(log))
    text = (*buf)->getBuffer().str();
  llvm::sys::fs::remove(log);
  if (rc != 0)
    throw rt::Error("linking '" + output + "' failed (" + linkCommand(object, output) + ")" +
                    (error.empty() ? "" : ": " + error) + (text.empty() ? "" : "\n" + text));
}

} // namespace shardc::codegen
