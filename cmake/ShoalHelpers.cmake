# shoal_add_library(NAME SOURCES ... [DEPS ...] [PRIVATE_DEPS ...])
#   One static library per subsystem, named shoal_<NAME>, with src/ as its include root.
#   A subsystem without sources yet is an INTERFACE library that only carries its dependencies.
function(shoal_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target shoal_${name})
  if(ARG_SOURCES)
    add_library(${target} STATIC ${ARG_SOURCES})
    target_include_directories(${target} PUBLIC "${PROJECT_SOURCE_DIR}/src")
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE "${PROJECT_SOURCE_DIR}/src")
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# shoal_add_test(NAME SOURCES ... DEPS ... [LABELS ...])
#   A GoogleTest binary; each TEST becomes a CTest test carrying LABELS ("unit" by default).
function(shoal_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    SHOAL_TESTDATA_DIR="${SHOAL_TESTDATA_DIR}"
    SHOAL_ORACLE_DIR="${SHOAL_ORACLE_DIR}"
    SHOAL_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()
