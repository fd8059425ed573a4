# The design in the repository (label docs): tests/docs/design_check.sh checks that
# docs/design.md carries every lua/ script's KEYS/ARGV header as it is, that no tracked
# file links outside the repository, that every relative Markdown link resolves, and that
# the READMEs' configuration tables are what the binaries' --help-markdown prints.
# No server: it reads the source tree and runs the two binaries' --help-markdown.
add_test(NAME docs_design_check
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/docs/design_check.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(docs_design_check PROPERTIES LABELS docs TIMEOUT 60)

# The layout (label docs, issue 30): no production C file over 800 lines, order/ and
# consumer/ borrow nothing from each other, no event2/http.h in order/, and no two files
# of order/ or consumer/ call each other in a loop (read from this build's object files).
add_test(NAME docs_layout_check
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/docs/layout_check.py ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(docs_layout_check PROPERTIES LABELS docs TIMEOUT 60)
