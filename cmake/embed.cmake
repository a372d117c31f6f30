# cmake -DIN=FILE -DOUT=FILE.cpp -DID=NAME -P embed.cmake: FILE's text, byte for byte, as
# `extern const char prism::embedded::NAME[]` (engine/CMakeLists.txt, prism_engine_library).
file(READ "${IN}" text)
string(FIND "${text}" ")prism_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} holds the raw string's closing delimiter )prism_embed\"")
endif()
set(code "// Generated from ${IN} by cmake/embed.cmake: its text, byte for byte.\n")
string(APPEND code "namespace prism::embedded {\nextern const char ${ID}[];\nconst char ${ID}[] = R\"prism_embed(")
string(APPEND code "${text}")
string(APPEND code ")prism_embed\";\n}  // namespace prism::embedded\n")
file(WRITE "${OUT}.tmp" "${code}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
