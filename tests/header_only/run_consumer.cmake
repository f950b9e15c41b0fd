# cmake -P script: compiles consumer.cpp with nothing but the include path (no library, no -m
# flags), once without OpenMP and, when OPENMP_FLAGS is given, once with it, and runs both.
#   -DCXX=<compiler> -DSTD_FLAG=<-std=c++20> -DINCLUDE_DIR=<include/> -DSOURCE=<consumer.cpp>
#   -DWORK_DIR=<scratch> [-DOPENMP_FLAGS=<-fopenmp>]
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step)
  list(JOIN ARGN " " command)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${command}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${command}")
  endif()
endfunction()

function(build_and_run name)
  step(${CXX} ${STD_FLAG} -O2 -I${INCLUDE_DIR} ${ARGN} ${SOURCE} -o ${WORK_DIR}/${name})
  step(${WORK_DIR}/${name})
endfunction()

build_and_run(consumer_serial)
if(OPENMP_FLAGS)
  separate_arguments(openmp UNIX_COMMAND "${OPENMP_FLAGS}")
  build_and_run(consumer_openmp ${openmp})
endif()
