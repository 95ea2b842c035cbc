# `cmake --install build --prefix P`: headers under P/include/globe, libglobe.a under P/lib, the
# tools under P/bin, and the two ways a C++ project finds them: a CMake package
# (find_package(Globe) -> Globe::globe, P/lib/cmake/Globe) and a pkg-config file (P/lib/pkgconfig/globe.pc).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS globe EXPORT GlobeTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/globe/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/globe
        FILES_MATCHING PATTERN "*.h")
install(FILES ${GLOBE_GENERATED_DIR}/globe/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/globe)
install(TARGETS globe-launch globe-ckpt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT GlobeTargets NAMESPACE Globe:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Globe)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/GlobeConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/GlobeConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Globe)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/GlobeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/GlobeConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/GlobeConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Globe)

# The prefix is only known at install time: the .pc file is written then. A CUDA build's users
# link the CUDA runtime and NCCL too (cuBLAS is opened at run time).
set(GLOBE_PC_CUDA_LIBS "")
if(GLOBE_WITH_CUDA)
  set(GLOBE_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart")
  if(GLOBE_WITH_NCCL)
    string(APPEND GLOBE_PC_CUDA_LIBS " ${GLOBE_NCCL_LIBRARY}")
  endif()
endif()
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(CMAKE_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(GLOBE_PC_CUDA_LIBS \"${GLOBE_PC_CUDA_LIBS}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/globe.pc.in\" \"${CMAKE_CURRENT_BINARY_DIR}/globe.pc\" @ONLY)
  file(INSTALL \"${CMAKE_CURRENT_BINARY_DIR}/globe.pc\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\")
")
