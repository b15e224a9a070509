
# The celery_beat source: its mapping and CeleryBeatSource over a SQLite database made from
# django-celery-beat's own schema (fixtures/django_celery_beat_schema.sql, from its migrations).
pkg_check_modules(TEST_SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  sources/celery_beat/celery_beat_source_test.cc)
target_link_libraries(celery_beat_source_test PRIVATE PkgConfig::TEST_SQLITE3)
# One test per database, so that the two wait for beat's minutes side by side.
foreach(db postgres sqlite)
  # Real PostgreSQL 15 (or SQLite), Redis, Django with django-celery-beat and -results, celery
  # beat and worker, read by the exporter. Runs as root (postgres runs as its own user).
  schedwatch_script_test(NAME celery_beat_e2e_${db} LABELS integration needs-root TIMEOUT 600
    COMMAND ${TESTS}/sources/celery_beat/celery_beat_e2e_test.py --exporter ${EXPORTER} --db ${db})
  # reconcile inserts deleted tasks from their templates; Django's DatabaseScheduler loads them.
  schedwatch_script_test(NAME celery_beat_reconcile_${db} LABELS integration needs-root
    TIMEOUT 300 COMMAND ${TESTS}/sources/celery_beat/celery_beat_reconcile_test.py
                        --exporter ${EXPORTER} --db ${db})
endforeach()
