add_subdirectory(oracle)
