# schedwatch_rulegen: its output checked with the real promtool and amtool, golden files in
# rules/, bad specs against `schedwatch_exporter check`, and unit tests of the library.
if(TARGET schedwatch_rulegen AND TARGET schedwatch_exporter)
  foreach(check golden promtool amtool bad_spec dashboard)
    # RulegenGolden matches `ctest -R Golden` (SCHEDWATCH_UPDATE_GOLDEN=1 rewrites rules/).
    set(test_name rulegen_${check})
    if(check STREQUAL "golden")
      set(test_name RulegenGolden)
    endif()
    add_test(NAME ${test_name}
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/rules/rules_test.py ${check}
                     --rulegen $<TARGET_FILE:schedwatch_rulegen>
                     --exporter $<TARGET_FILE:schedwatch_exporter>
                     --source-dir ${CMAKE_SOURCE_DIR})
  endforeach()
endif()

# The prometheus-operator examples (ServiceMonitor, PrometheusRule, kustomization) against the
# CRDs' schema.
add_test(NAME rulegen_operator_examples
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/rules/operator_examples_test.py
                 --source-dir ${CMAKE_SOURCE_DIR})

if(TARGET schedwatch_rulegen_lib)
  find_package(yaml-cpp REQUIRED)
  find_package(nlohmann_json REQUIRED)
  add_executable(rulegen_test ${CMAKE_CURRENT_SOURCE_DIR}/rules/rulegen_test.cc)
  target_link_libraries(rulegen_test PRIVATE schedwatch::rulegen yaml-cpp nlohmann_json::nlohmann_json GTest::gtest
                                             GTest::gtest_main)
  gtest_discover_tests(rulegen_test TEST_PREFIX "rulegen." DISCOVERY_TIMEOUT 60)
endif()
