import os
import lit.formats

config.name = "shardc"
config.test_format = lit.formats.ShTest(not lit_config.useValgrind)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "train_ops_invalid.mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.shardc_obj_root, "test", "lit")

tools = [os.path.join(config.shardc_tools_dir, "shardc-opt"),
         os.path.join(config.shardc_tools_dir, "shardc")]
path = [os.path.join(config.shardc_tools_dir, "shardc-opt"),
        os.path.join(config.shardc_tools_dir, "shardc"),
        config.llvm_tools_dir, "/usr/lib/llvm-22/bin"]
config.environment["PATH"] = os.pathsep.join(path + [config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%models", os.path.join(config.shardc_src_root, "models")))
config.substitutions.append(("%python", "/usr/bin/python3"))
