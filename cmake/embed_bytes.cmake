# _embed(var file): sets <var>_bytes (a C array initializer, "0x..," in lines of 32) and
# <var>_size for the bytes of file; _write_if_changed(path text) leaves an unchanged file alone
# (so its dependents do not rebuild). Shared by web_embed.cmake and report_embed.cmake (cmake -P).
function(_embed var file)
  file(READ ${file} _hex HEX)
  string(LENGTH "${_hex}" _n)
  math(EXPR _size "${_n} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  # Lines of 32 bytes keep the file diffable and the compiler's line buffer small.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" _bytes "${_bytes}")
  set(${var}_size ${_size} PARENT_SCOPE)
  set(${var}_bytes "${_bytes}" PARENT_SCOPE)
endfunction()

function(_write_if_changed path text)
  set(_old "")
  if(EXISTS ${path})
    file(READ ${path} _old)
  endif()
  if(NOT _old STREQUAL text)
    file(WRITE ${path} "${text}")
  endif()
endfunction()
