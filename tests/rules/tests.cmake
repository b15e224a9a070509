# schedwatch_rulegen: its output checked with the real promtool and amtool, golden files in
# rules/, bad specs against `schedwatch_exporter check`, and unit tests of the library.
foreach(check golden promtool amtool bad_spec dashboard)
  # RulegenGolden matches `ctest -R Golden` (SCHEDWATCH_UPDATE_GOLDEN=1 rewrites rules/).
  set(test_name rulegen_${check})
  set(labels integration)
  if(check STREQUAL "golden")
    set(test_name RulegenGolden)
  elseif(check STREQUAL "promtool")
    set(labels peer)  # promtool evaluates every generated rule test: slow, and the judge
  elseif(check STREQUAL "amtool")
    set(labels integration peer)
  endif()
  schedwatch_script_test(NAME ${test_name} LABELS ${labels}
    COMMAND ${TESTS}/rules/rules_test.py ${check} --rulegen ${RULEGEN} --exporter ${EXPORTER}
            --source-dir ${CMAKE_SOURCE_DIR})
endforeach()

# --output-format mixin and mixin/ rendered by jsonnet: the same rules and dashboard as the files.
schedwatch_script_test(NAME rulegen_mixin LABELS integration
  COMMAND ${TESTS}/rules/mixin_test.py --rulegen ${RULEGEN} --source-dir ${CMAKE_SOURCE_DIR})

# Every generated rule file and dashboard against the mixin conventions (mixtool lint,
# dashboard-linter), encoded in the script with its documented exceptions.
schedwatch_script_test(NAME rulegen_conventions LABELS integration
  COMMAND ${TESTS}/rules/conventions_test.py --rulegen ${RULEGEN} --source-dir ${CMAKE_SOURCE_DIR})

# The prometheus-operator examples (ServiceMonitor, PrometheusRule, kustomization) against the
# CRDs' schema.
schedwatch_script_test(NAME rulegen_operator_examples LABELS integration
  COMMAND ${TESTS}/rules/operator_examples_test.py --source-dir ${CMAKE_SOURCE_DIR})

find_package(yaml-cpp REQUIRED)
find_package(nlohmann_json REQUIRED)
add_executable(rulegen_test ${TESTS}/rules/rulegen_test.cc)
schedwatch_test_flags(rulegen_test)
target_link_libraries(rulegen_test PRIVATE schedwatch::rulegen schedwatch::source_catalog yaml-cpp nlohmann_json::nlohmann_json
                                           GTest::gtest GTest::gtest_main)
gtest_discover_tests(rulegen_test TEST_PREFIX "rulegen." DISCOVERY_TIMEOUT 60 TEST_LIST rulegen_test_TESTS)
schedwatch_discovered_test_properties(rulegen_test unit)
