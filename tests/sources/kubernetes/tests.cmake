# Kubernetes source: the real exporter against a loopback API server over TLS, and the example
# manifests of examples/kubernetes/. (The C++ tests beside this file are globbed by tests/.)
if(TARGET schedwatch_exporter)
  add_test(NAME kubernetes_exporter_e2e
           COMMAND /usr/bin/python3
                   ${CMAKE_CURRENT_SOURCE_DIR}/sources/kubernetes/exporter_kubernetes_test.py
                   --exporter $<TARGET_FILE:schedwatch_exporter> --source-dir ${CMAKE_SOURCE_DIR})
  set_tests_properties(kubernetes_exporter_e2e PROPERTIES TIMEOUT 300)
  add_test(NAME kubernetes_examples
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sources/kubernetes/examples_test.py
                   --exporter $<TARGET_FILE:schedwatch_exporter> --source-dir ${CMAKE_SOURCE_DIR})
  add_test(NAME kubernetes_reconcile
           COMMAND /usr/bin/python3
                   ${CMAKE_CURRENT_SOURCE_DIR}/sources/kubernetes/reconcile_kubernetes_test.py
                   --exporter $<TARGET_FILE:schedwatch_exporter>)
  set_tests_properties(kubernetes_reconcile PROPERTIES TIMEOUT 300)
  # Two replicas of one watcher, both with --reconcile.on-start: a missing CronJob created once.
  add_test(NAME kubernetes_reconcile_replicas
           COMMAND /usr/bin/python3
                   ${CMAKE_CURRENT_SOURCE_DIR}/sources/kubernetes/reconcile_replicas_test.py
                   --exporter $<TARGET_FILE:schedwatch_exporter>)
  set_tests_properties(kubernetes_reconcile_replicas PROPERTIES TIMEOUT 120)
endif()
