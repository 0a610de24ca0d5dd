# Install rules and the CMake package of shardc (included last by the top-level
# CMakeLists.txt, when SHARDC_BUILD_COMPILER is on, so that every target
# exists). `cmake --install build --prefix P` gives
#
#   P/bin/shardc-opt, P/bin/shardc          the tools (shardc-opt loads pass plugins)
#   P/include/{dialects,passes,compiler,runtime}/...   every header, generated .h.inc
#                                           and .td included, at the paths used in tree
#                                           (#include "dialects/xf/XfOps.h")
#   P/lib/lib*.a                            the libraries below (static)
#   P/lib/cmake/shardc/ShardcConfig.cmake   find_package(Shardc): targets shardc::*
#   P/share/shardc/hardware/*.json          hardware descriptions (SHARDC_HARDWARE_DIR)
#
# examples/out-of-tree-pass builds a pass plugin against it;
# test/install/out_of_tree.sh checks the whole round trip.

include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(SHARDC_VERSION 0.1.0)
set(SHARDC_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/shardc)

# Include paths only (shardc's headers and, in the installed package, MLIR's
# and LLVM's): what a pass plugin compiles against when it takes every shardc
# symbol from shardc-opt at load time instead of linking a second copy.
add_library(ShardcHeaders INTERFACE)
# (Installed, include/ comes from INCLUDES DESTINATION below, as for every target.)
target_include_directories(ShardcHeaders INTERFACE
  $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}> $<BUILD_INTERFACE:${CMAKE_BINARY_DIR}>)
add_library(shardc::ShardcHeaders ALIAS ShardcHeaders)

# The exported libraries: these and every in-project library they link,
# whatever that is at configure time (the closure is computed, so a library
# added under runtime/ or compiler/ and linked PUBLIC by one of these is
# exported without touching this file).
set(_shardc_export_roots ShardcXf ShardcRt ShardcCost ShardcAbiEncoding ShardcExecutor ShardcPasses
    ShardcPipelines ShardcModels)
set(_shardc_exported "")
set(_shardc_external "")
set(_shardc_pending ${_shardc_export_roots})
while(_shardc_pending)
  list(POP_FRONT _shardc_pending _t)
  if(NOT TARGET ${_t} OR _t IN_LIST _shardc_exported)
    continue()
  endif()
  get_target_property(_imported ${_t} IMPORTED)
  get_target_property(_aliased ${_t} ALIASED_TARGET)
  if(_imported)
    list(APPEND _shardc_external ${_t})
    continue()
  elseif(_aliased)
    list(APPEND _shardc_pending ${_aliased})
    continue()
  endif()
  list(APPEND _shardc_exported ${_t})
  get_target_property(_type ${_t} TYPE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(_deps ${_t} INTERFACE_LINK_LIBRARIES)
  else()
    get_target_property(_deps ${_t} LINK_LIBRARIES)
  endif()
  if(_deps)
    list(APPEND _shardc_pending ${_deps})
  endif()
endwhile()

# Include directories under the source or build tree are build-tree only (the
# installed targets get include/ from INCLUDES DESTINATION below); install(EXPORT)
# refuses them otherwise. Each exported library also carries ShardcHeaders.
foreach(_t IN LISTS _shardc_exported)
  get_target_property(_dirs ${_t} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_fixed "")
    foreach(_d IN LISTS _dirs)
      string(FIND "${_d}/" "${CMAKE_SOURCE_DIR}/" _in_src)
      string(FIND "${_d}/" "${CMAKE_BINARY_DIR}/" _in_bin)
      if(_in_src EQUAL 0 OR _in_bin EQUAL 0)
        list(APPEND _fixed "$<BUILD_INTERFACE:${_d}>")
      else()
        list(APPEND _fixed "${_d}")
      endif()
    endforeach()
    set_property(TARGET ${_t} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_fixed}")
  endif()
  target_link_libraries(${_t} INTERFACE ShardcHeaders)
endforeach()
message(STATUS "shardc: exported libraries: ${_shardc_exported}")
# ShardcConfig.cmake.in finds the packages behind these imported targets; a
# new one needs its find_dependency() there.
list(REMOVE_DUPLICATES _shardc_external)
list(REMOVE_ITEM _shardc_external MLIR LLVM OpenMP::OpenMP_CXX Threads::Threads nlohmann_json::nlohmann_json)
if(_shardc_external)
  message(WARNING "shardc: exported libraries link ${_shardc_external}: add a "
                  "find_dependency() for it to cmake/ShardcConfig.cmake.in")
endif()

install(TARGETS ShardcHeaders ${_shardc_exported}
  EXPORT ShardcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The tools. shardc-opt exports its symbols (ENABLE_EXPORTS, tools/shardc-opt)
# so that a plugin's references to the xf dialect resolve to this copy. Both
# keep the run path to libMLIR/libLLVM (not in the loader's default path on
# Debian). `shardc compile` still links steps against the runtime libraries of
# the build tree it was built from (compiler/codegen/LinkConfig.h).
set_target_properties(shardc-opt shardc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS shardc-opt shardc EXPORT ShardcTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT ShardcTargets NAMESPACE shardc:: DESTINATION ${SHARDC_INSTALL_CMAKEDIR})

# Headers at their in-tree paths. Sources: every .h (and the .td files that
# generated headers and user .td files include); build tree: the generated
# .h.inc (found at install time, so a fresh build tree is no problem).
foreach(_dir dialects passes compiler runtime)
  file(GLOB_RECURSE _headers CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}
       ${CMAKE_SOURCE_DIR}/${_dir}/*.h ${CMAKE_SOURCE_DIR}/${_dir}/*.td)
  foreach(_h IN LISTS _headers)
    get_filename_component(_hdir ${_h} DIRECTORY)
    install(FILES ${CMAKE_SOURCE_DIR}/${_h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${_hdir})
  endforeach()
endforeach()
foreach(_dir dialects passes)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/${_dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${_dir}
          FILES_MATCHING PATTERN "*.h.inc" PATTERN "CMakeFiles" EXCLUDE)
endforeach()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/compiler/cost/hardware/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/shardc/hardware FILES_MATCHING PATTERN "*.json")

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ShardcConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/ShardcConfig.cmake
  INSTALL_DESTINATION ${SHARDC_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/ShardcConfigVersion.cmake
  VERSION ${SHARDC_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/ShardcConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/ShardcConfigVersion.cmake
        DESTINATION ${SHARDC_INSTALL_CMAKEDIR})
