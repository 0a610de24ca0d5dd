# lit configuration of the example's tests: %shardc-opt is the installed
# shardc-opt with the plugin loaded; FileCheck and not come from LLVM.
import os
import lit.formats

config.name = "shardc-example-pass"
config.test_format = lit.formats.ShTest(not lit_config.useValgrind)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.dirname(config.example_plugin)
config.substitutions.append(
    ("%shardc-opt", f"{config.shardc_opt} --load-pass-plugin={config.example_plugin}"))
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, "/usr/lib/llvm-22/bin", os.environ.get("PATH", "")])
