# Code layout of the programs: the functions that loading, checking and running a model
# executes are linked next to each other.
#
# Linux maps a program's code in 64 KiB windows around each page it touches (fault-around).
# Loading and running a model executes about 1 MB of `inferopt`'s 8 MB of code, spread over
# most of its windows; placed together (cmake/text_order.txt, written by
# scripts/gen_text_order.py), it fills a few. Needs every function in its own section
# (-ffunction-sections, set for all C++ here) and lld's --symbol-ordering-file; with another
# linker the programs keep the default layout.

add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-ffunction-sections>)

find_program(INFEROPT_LLD NAMES ld.lld)
set(INFEROPT_TEXT_ORDER ${CMAKE_CURRENT_LIST_DIR}/text_order.txt)

# Links `target` with the functions of text_order.txt first, where lld is there.
function(inferopt_order_text target)
  if(INFEROPT_LLD AND EXISTS ${INFEROPT_TEXT_ORDER} AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_link_options(${target} PRIVATE -fuse-ld=lld -Wl,--symbol-ordering-file=${INFEROPT_TEXT_ORDER}
                        -Wl,--no-warn-symbol-ordering)
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${INFEROPT_TEXT_ORDER})
  endif()
endfunction()
