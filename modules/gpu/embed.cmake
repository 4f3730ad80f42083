# Helpers of the two embedding scripts (embed_cubins.cmake, embed_source.cmake),
# included by them under cmake -P.
#   memra_embed_bytes(OUT_VAR HEX): the hex string of file(READ ... HEX) (or
#   string(HEX)) as C initialiser text "0x..,0x..," with 24 bytes a line.
function(memra_embed_bytes out_var hex)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "((0x..,){24})" "\\1\n    " bytes "${bytes}")
  set(${out_var} "${bytes}" PARENT_SCOPE)
endfunction()

# memra_embed_write(OUT TEXT): write OUT through a temporary file and a rename,
# so a build interrupted half-way never leaves a truncated source behind.
function(memra_embed_write out text)
  file(WRITE "${out}.tmp" "${text}")
  file(RENAME "${out}.tmp" "${out}")
endfunction()
