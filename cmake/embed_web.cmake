# Embeds the web page (web/) into the binary, so `qvl serve` works offline with no files beside it.
#
# Included from the top-level CMakeLists.txt: defines the static library qvl_web (the generated
# web_assets.cpp, see src/server/web_assets.h) and makes qvl_server's users link it. The generation
# itself runs at build time, whenever a file under web/ changes, by running this same file in
# script mode:  cmake -DWEB_DIR=... -DTEMPLATE=... -DOUT=... -P embed_web.cmake
#
# Embedded: every file under web/ except the unit tests (web/test/) and documentation (*.md).

function(qvl_web_files dir out_var)
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE ${dir} ${dir}/*)
  list(FILTER files EXCLUDE REGEX "^test/")
  list(FILTER files EXCLUDE REGEX "(^|/)\\.")        # editor and OS droppings
  list(FILTER files EXCLUDE REGEX "\\.md$")
  list(SORT files)  # the generated table is searched by binary search on the path
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

function(qvl_web_mime file out_var)
  get_filename_component(ext ${file} LAST_EXT)
  string(TOLOWER "${ext}" ext)
  set(types
    .html "text/html\; charset=utf-8"  .css "text/css\; charset=utf-8"
    .js "text/javascript\; charset=utf-8"  .mjs "text/javascript\; charset=utf-8"
    .json "application/json"  .svg "image/svg+xml"  .png "image/png"  .ico "image/x-icon"
    .txt "text/plain\; charset=utf-8"  .woff2 "font/woff2"  .webmanifest "application/manifest+json")
  list(FIND types "${ext}" k)
  if(k EQUAL -1)
    message(FATAL_ERROR "embed_web: no MIME type known for web/${file}; add its extension to qvl_web_mime")
  endif()
  math(EXPR k "${k} + 1")
  list(GET types ${k} mime)
  set(${out_var} "${mime}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  # ---- build time: write ${OUT} from ${WEB_DIR}
  qvl_web_files(${WEB_DIR} files)
  if(NOT files)
    message(FATAL_ERROR "embed_web: no files found in ${WEB_DIR}")
  endif()
  set(WEB_ASSET_ARRAYS "")
  set(WEB_ASSET_TABLE "")
  set(i 0)
  # One escaped byte, repeated: CMake regexes have no {n} and few groups, so the 32-byte line
  # pattern is spelled out once here.
  set(byte "\\\\x[0-9a-f][0-9a-f]")
  set(line_re "")
  foreach(k RANGE 1 32)
    string(APPEND line_re "${byte}")
  endforeach()
  foreach(f ${files})
    file(READ ${WEB_DIR}/${f} hex HEX)
    string(REGEX REPLACE "([0-9a-f][0-9a-f])" "\\\\x\\1" esc "${hex}")
    # 32 bytes per source line; a \xNN escape ends at the next backslash or quote, never mid-byte.
    string(REGEX REPLACE "(${line_re})" "\\1\"\n    \"" esc "${esc}")
    qvl_web_mime(${f} mime)
    string(APPEND WEB_ASSET_ARRAYS "// web/${f}\nconstexpr char kFile${i}[] =\n    \"${esc}\";\n")
    string(APPEND WEB_ASSET_TABLE
      "    {\"/${f}\", \"${mime}\", std::string_view(kFile${i}, sizeof(kFile${i}) - 1)},\n")
    math(EXPR i "${i} + 1")
  endforeach()
  configure_file(${TEMPLATE} ${OUT} @ONLY)
  # configure_file leaves an unchanged output alone; touch it so the build sees it as up to date.
  file(TOUCH_NOCREATE ${OUT})
  return()
endif()

# ---- configure time: the qvl_web library and the rule that regenerates it
set(QVL_WEB_DIR ${CMAKE_SOURCE_DIR}/web)
qvl_web_files(${QVL_WEB_DIR} qvl_web_rel)
set(qvl_web_deps "")
foreach(f ${qvl_web_rel})
  list(APPEND qvl_web_deps ${QVL_WEB_DIR}/${f})
endforeach()
# CONFIGURE_DEPENDS: adding or removing a file under web/ re-runs the configure step, so the
# dependency list above stays complete.
file(GLOB_RECURSE qvl_web_glob CONFIGURE_DEPENDS ${QVL_WEB_DIR}/*)

set(qvl_web_out ${CMAKE_BINARY_DIR}/generated/web_assets.cpp)
add_custom_command(
  OUTPUT ${qvl_web_out}
  COMMAND ${CMAKE_COMMAND} -DWEB_DIR=${QVL_WEB_DIR} -DTEMPLATE=${CMAKE_CURRENT_LIST_DIR}/web_assets.cpp.in
          -DOUT=${qvl_web_out} -P ${CMAKE_CURRENT_LIST_FILE}
  DEPENDS ${qvl_web_deps} ${CMAKE_CURRENT_LIST_FILE} ${CMAKE_CURRENT_LIST_DIR}/web_assets.cpp.in
  COMMENT "Embedding web/ into the binary"
  VERBATIM)
add_library(qvl_web STATIC ${qvl_web_out})
target_include_directories(qvl_web PUBLIC ${CMAKE_SOURCE_DIR}/src)
# The server serves the page: everything that links qvl_server gets the assets. INTERFACE works
# whether qvl_server is still an INTERFACE placeholder or a real static library.
if(TARGET qvl_server)
  target_link_libraries(qvl_server INTERFACE qvl_web)
endif()
