
# The celery_beat source: its mapping and CeleryBeatSource over a SQLite database made from
# django-celery-beat's own schema (fixtures/django_celery_beat_schema.sql, from its migrations).
pkg_check_modules(TEST_SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  sources/celery_beat/celery_beat_source_test.cc)
target_link_libraries(celery_beat_source_test PRIVATE PkgConfig::TEST_SQLITE3)
