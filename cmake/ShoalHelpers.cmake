# shoal_library(NAME SOURCES ... DEPS ...): a module library with the project's warnings.
function(shoal_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "${name} has no sources")
  endif()
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  shoal_warnings(${name})
endfunction()

function(shoal_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor
                                           -Wpedantic -Werror=return-type -Werror)
endfunction()

# Fails the configure step when `target` links anything outside `allowed`.
function(shoal_check_deps target)
  cmake_parse_arguments(ARG "" "" "ALLOWED" ${ARGN})
  if(NOT TARGET ${target})
    message(FATAL_ERROR "shoal_check_deps: no target ${target}")
  endif()
  get_target_property(libs ${target} LINK_LIBRARIES)
  foreach(lib IN LISTS libs)
    if(NOT lib IN_LIST ARG_ALLOWED)
      message(FATAL_ERROR "${target} may not link ${lib} (allowed: ${ARG_ALLOWED})")
    endif()
  endforeach()
endfunction()

# The non-test sources of a module folder.
function(shoal_module_sources out dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_test\\.cc$")
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

# The unit tests that sit beside a module's code.
function(shoal_module_tests out dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*_test.cc)
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()
