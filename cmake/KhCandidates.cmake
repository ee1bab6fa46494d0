# Reading candidate.toml from CMake, for the targets that compile candidates' sources themselves
# (examples/: a compile-only check of every example and test candidate; kernels/: libkhk). Only the
# single-line forms the shipped manifests use are understood: `language = "..."`,
# `sources = [...]` and, under [params], `NAME = [first, ...]`.

# Reads a candidate.toml into the caller's
#   <prefix>_language  "cuda", "cpp", "python" or "triton"
#   <prefix>_sources   absolute paths of every listed source (headers included)
#   <prefix>_faults    the allowed values of a FAULT param (test candidates), else empty
#   <prefix>_defaults  NAME=first-value for every other param: the configuration the harness
#                      builds when no --param is given
function(kh_read_candidate_manifest dir prefix)
  # A changed manifest (a new param, a new source) must reconfigure, not build with stale -D flags.
  # Once per manifest: two directories declaring the same dependency give ninja two rules for it.
  get_property(watched GLOBAL PROPERTY KH_WATCHED_MANIFESTS)
  if(NOT "${dir}/candidate.toml" IN_LIST watched)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${dir}/candidate.toml")
    set_property(GLOBAL APPEND PROPERTY KH_WATCHED_MANIFESTS "${dir}/candidate.toml")
  endif()
  file(STRINGS "${dir}/candidate.toml" lines)
  set(language "")
  set(sources "")
  set(faults "")
  set(defaults "")
  set(section "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^\\[([a-z_]+)\\]")
      set(section "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^language *= *\"([a-z]+)\"")
      set(language "${CMAKE_MATCH_1}")
    elseif(line MATCHES "^sources *= *\\[(.*)\\]")
      string(REGEX MATCHALL "\"[^\"]+\"" quoted "${CMAKE_MATCH_1}")
      foreach(item IN LISTS quoted)
        string(REPLACE "\"" "" item "${item}")
        list(APPEND sources "${dir}/${item}")
      endforeach()
    elseif(section STREQUAL "params" AND line MATCHES "^([A-Za-z_][A-Za-z0-9_]*) *= *\\[(.*)\\]")
      set(name "${CMAKE_MATCH_1}")
      string(REGEX MATCHALL "\"[^\"]+\"|[^, \"]+" values "${CMAKE_MATCH_2}")
      if(name STREQUAL "FAULT")
        foreach(item IN LISTS values)
          string(REPLACE "\"" "" item "${item}")
          list(APPEND faults "${item}")
        endforeach()
      else()
        list(GET values 0 first)
        string(REPLACE "\"" "" first "${first}")
        list(APPEND defaults "${name}=${first}")
      endif()
    endif()
  endforeach()
  set(${prefix}_language "${language}" PARENT_SCOPE)
  set(${prefix}_sources "${sources}" PARENT_SCOPE)
  set(${prefix}_faults "${faults}" PARENT_SCOPE)
  set(${prefix}_defaults "${defaults}" PARENT_SCOPE)
endfunction()

# The flags the harness's builder compiles candidates with (src/kh/build/builder.cpp), plus
# warnings as errors, on an OBJECT or library target of candidate sources.
function(kh_candidate_compile_options target language)
  if(language STREQUAL "cuda")
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES 90a CUDA_STANDARD 17
                                               CUDA_STANDARD_REQUIRED ON
                                               POSITION_INDEPENDENT_CODE ON)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo --Werror=all-warnings
                                 -Xcompiler=-Wall,-Wextra>)
  else()
    set_target_properties(${target} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
                                               CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Werror)
  endif()
endfunction()
