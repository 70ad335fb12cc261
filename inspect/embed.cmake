# Turns page.html into a C file holding it as a byte array (the page the
# inspector serves at /), so the library needs no files at run time.
# Usage: cmake -DIN=page.html -DOUT=page.c -P embed.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" len)
math(EXPR size "${len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from inspect/page.html by inspect/embed.cmake; do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char tes__inspect_page[] = {\n${bytes}0x00};\n"
  "const size_t tes__inspect_page_size = ${size};\n")
